package client

import "github.com/askpoint/askpoint/question"

// Field is one top-level property of a question's answer schema, with the
// constraints a person needs to see to answer it. It is the question
// package's one model of a question's fields, which the terminal prompts
// and the web inbox's form are both built from.
type Field = question.Field
