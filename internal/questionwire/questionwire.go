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

// encode and decode are a func(*question.Question) ([]byte, error) and a
// func([]byte, *question.Question) error, set by package question.
var encode, decode any

// RegisterCodec sets what Encode and Decode call. Package question calls
// it once, from its init.
func RegisterCodec[Q any](enc func(q *Q) ([]byte, error), dec func(raw []byte, q *Q) error) {
	encode, decode = enc, dec
}

// Encode is json.Marshal(q), written without reflection.
func Encode[Q any](q *Q) ([]byte, error) { return encode.(func(*Q) ([]byte, error))(q) }

// Decode is json.Unmarshal(raw, q) for a zero q, read without reflection
// when raw is in the form Encode writes.
func Decode[Q any](raw []byte, q *Q) error { return decode.(func([]byte, *Q) error)(raw, q) }
