package booking

import (
	"encoding/json"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Card describes the booking agent.
func Card() a2a.AgentCard {
	return a2a.AgentCard{
		Name: "Booking agent",
		Description: "Books a seat on a flight. Holds the seat for 10 minutes while it asks you to confirm the fare; " +
			"a confirmation that comes later is still read, and the seat booked if nobody took it meanwhile.",
		Version: "1.0.0",
		Skills: []a2a.AgentSkill{{
			ID:          "book-seat",
			Name:        "Book a seat",
			Description: "Reserves the seat named in text, e.g. \"Book seat 14C on flight AP123\", and books it when you confirm (answer {\"confirm\": true}).",
			Examples:    []string{"Book seat 14C on flight AP123", "seat 11a on AP456 please"},
			Tags:        []string{"travel", "booking"},
		}},
	}
}

func dataPart(v any) *a2a.Part {
	var m map[string]any
	raw, _ := json.Marshal(v)
	_ = json.Unmarshal(raw, &m)
	p := a2a.NewDataPart(m)
	p.MediaType = "application/json"
	return p
}

func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}
