package expense

import (
	"encoding/json"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Card describes the expense agent.
func Card() a2a.AgentCard {
	return a2a.AgentCard{
		Name:        "Expense agent",
		Description: "Files expense receipts. Asks which cost centre to charge when the caller has several, and for any missing amount or date, in one question.",
		Version:     "1.0.0",
		Skills: []a2a.AgentSkill{{
			ID:          "file-expense",
			Name:        "File an expense",
			Description: "Files a receipt described in text, e.g. \"File my taxi receipt from Tuesday, 42 euros\".",
			Examples:    []string{"File my taxi receipt from Tuesday, 42 euros", "File my taxi receipt"},
			Tags:        []string{"expenses", "finance"},
		}},
	}
}

func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}
