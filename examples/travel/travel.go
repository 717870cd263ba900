// Package travel is the worked example of a straight-line agent
// (askpoint.Flow): it asks where, then when and for how many, quotes the
// trip, asks for a confirmation and books it. Each question has its own
// answer type; the quote and the booking run once however often the
// function runs again.
package travel

import (
	"context"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/question"
)

// Trip is when, and for how many.
type Trip struct {
	Start      string `json:"start" jsonschema:"required,format=date,title=First day"`
	End        string `json:"end" jsonschema:"required,format=date,title=Last day"`
	Travellers int    `json:"travellers" jsonschema:"required,minimum=1,maximum=9,title=Travellers"`
}

// Agent books trips with agency, which quotes and books under a key that
// makes a repeated call harmless.
func Agent(agency Agency) askpoint.Agent {
	return askpoint.Flow(func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
		city, err := askpoint.AskFor[string](call, question.Question{Text: "Where would you like to go?", Options: Cities})
		if err != nil {
			return askpoint.Outcome{}, err // the task pauses here; the function runs again when the answer comes
		}
		trip, err := askpoint.AskFor(call, question.Question{Text: "When, and how many of you?"}, lastDayAfterFirst)
		if err != nil {
			return askpoint.Outcome{}, err
		}
		price, err := askpoint.Once(call, "quote", func(key string) (int, error) { return agency.Quote(ctx, key, city, trip) })
		if err != nil {
			return askpoint.Outcome{}, err
		}
		text := fmt.Sprintf("Book %s, %s to %s, for %d at %d EUR?", city, trip.Start, trip.End, trip.Travellers, price)
		ok, err := askpoint.AskFor[bool](call, question.Question{Text: text, Options: YesNo})
		if err != nil {
			return askpoint.Outcome{}, err
		}
		if !ok {
			return askpoint.Reject("Not booked: the trip was not confirmed."), nil
		}
		ref, err := askpoint.Once(call, "book", func(key string) (string, error) { return agency.Book(ctx, key, city, trip) })
		if err != nil {
			return askpoint.Outcome{}, err
		}
		return askpoint.Complete(&a2a.Artifact{ID: "booking", Name: "booking", Parts: a2a.ContentParts{a2a.NewTextPart("Booked " + city + ": " + ref)}}), nil
	})
}
