// Package questionwire is the engine's seam into package question for
// writing a question's status message: what question gives the engine
// beside the message, kept out of question's API.
package questionwire

import "github.com/a2aproject/a2a-go/v2/a2a"

// messageAndWire is a func(*question.Question) (*a2a.Message, any), set by
// package question when it is initialized (this package cannot name the
// type: question imports it).
var messageAndWire any

// Register sets what MessageAndWire calls. Package question calls it once,
// from its init.
func Register[Q any](f func(q *Q) (*a2a.Message, any)) { messageAndWire = f }

// MessageAndWire is q's status message (q a *question.Question), as
// q.Message builds it, and a value that encoding/json encodes as exactly
// the bytes it writes for the message's data part, in one pass: a struct
// with the data part's members in the order of the map's sorted keys, its
// schema the schema's cached encoding, so that storing and sending the
// question does not walk and sort the data part's maps again. The data
// part stays the generic map for what reads it in process. The value
// shares the map's values: encode it before the message is handed on.
func MessageAndWire[Q any](q *Q) (*a2a.Message, any) {
	return messageAndWire.(func(*Q) (*a2a.Message, any))(q)
}
