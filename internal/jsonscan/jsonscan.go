// Package jsonscan holds the byte-level steps shared by askpoint's readers
// of raw JSON (the front's request checks, the question's one-pass answer
// reading), so that each step is written once.
package jsonscan

// StringEnd returns the index just past the JSON string that starts at
// b[i] (a '"'), or -1 when the string is not terminated within b.
func StringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}
