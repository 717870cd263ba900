package travel

import (
	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Card is the travel agent's card.
func Card() a2a.AgentCard {
	return a2a.AgentCard{
		Name:        "Travel",
		Description: "Plans and books a trip: asks where, when and for how many, quotes it and books it once you confirm.",
		Version:     "1.0.0",
		Skills: []a2a.AgentSkill{{
			ID: "book-trip", Name: "Book a trip",
			Description: `Asks three questions in turn (a destination, the dates and travellers, a confirmation of the quote), e.g. "A trip for two in May".`,
			Examples:    []string{"A trip for two in May"},
			Tags:        []string{"travel", "booking"},
		}},
	}
}
