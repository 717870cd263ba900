package expense

import (
	"strings"
	"time"
)

// Parse extracts what it can from a request such as "File my taxi receipt
// from Tuesday, 42 euros". Weekday names mean the latest such day on or
// before today.
//
// What it reads is written down as regular expressions, which parse_test.go
// keeps and holds this hand-written reading to (FuzzParseReadsWhatTheRegexpsRead):
//
//	amount after:  (?i)(\d+(?:[.,]\d{1,2})?)\s*(euros?|eur|€|dollars?|usd|\$|pounds?|gbp|£|chf|francs?)
//	amount before: (?i)(€|\$|£)\s*(\d+(?:[.,]\d{1,2})?)
//	date:          \b(\d{4}-\d{2}-\d{2})\b, else yesterday, today, or a weekday's name as a word
//	vendor:        (?i)\b(?:my|a|the|this)\s+([a-z]+)\s+(?:receipt|bill|invoice|ticket|fare)
//
// each the leftmost match, as Go's regexp package finds it (its \s the
// ASCII spaces, its \b between an ASCII word character and anything
// else, its (?i) folding s to ſ and k to the Kelvin sign too).
func Parse(text string, today time.Time) Expense {
	var e Expense
	if amount, currency, ok := amountAfter(text); ok {
		e.Amount = parseAmount(amount)
		e.Currency = currencies[strings.ToLower(currency)]
	} else if currency, amount, ok := amountBefore(text); ok {
		e.Amount = parseAmount(amount)
		e.Currency = currencies[strings.ToLower(currency)]
	}
	lower := strings.ToLower(text)
	if d, ok := isoDate(text); ok {
		if _, err := time.Parse(time.DateOnly, d); err == nil {
			e.Date = d
		}
	} else if strings.Contains(lower, "yesterday") {
		e.Date = today.AddDate(0, 0, -1).Format(time.DateOnly)
	} else if strings.Contains(lower, "today") {
		e.Date = today.Format(time.DateOnly)
	} else {
		for d := time.Sunday; d <= time.Saturday; d++ {
			if hasWord(lower, weekdayNames[d]) {
				back := (int(today.Weekday()) - int(d) + 7) % 7
				e.Date = today.AddDate(0, 0, -back).Format(time.DateOnly)
				break
			}
		}
	}
	if w, ok := vendorWord(text); ok {
		w = strings.ToLower(w)
		e.Vendor = strings.ToUpper(w[:1]) + w[1:]
	}
	return e
}

// weekdayNames are the weekdays' names in lower case, by time.Weekday.
var weekdayNames = func() (out [7]string) {
	for d := time.Sunday; d <= time.Saturday; d++ {
		out[d] = strings.ToLower(d.String())
	}
	return out
}()

// currencyWords are the currencies' words in the order the amount's
// alternation tries them; a trailing "s?" is tried with its s first.
var currencyWords = []string{"euros?", "eur", "€", "dollars?", "usd", "$", "pounds?", "gbp", "£", "chf", "francs?"}

// amountAfter finds the leftmost amount followed by a currency.
func amountAfter(text string) (amount, currency string, ok bool) {
	for i := 0; i < len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		// A match starting inside this run of digits would read the same
		// run's end: trying its start is enough.
		end := number(text, i)
		w := skipSpace(text, end)
		for _, word := range currencyWords {
			if n, ok := foldWord(text, w, word); ok {
				return text[i:end], text[w:n], true
			}
		}
		i = digitsEnd(text, i)
	}
	return "", "", false
}

// amountBefore finds the leftmost currency sign followed by an amount.
func amountBefore(text string) (currency, amount string, ok bool) {
	for i := 0; i < len(text); i++ {
		var sign int
		switch {
		case text[i] == '$':
			sign = 1
		case strings.HasPrefix(text[i:], "€"):
			sign = len("€")
		case strings.HasPrefix(text[i:], "£"):
			sign = len("£")
		default:
			continue
		}
		if d := skipSpace(text, i+sign); d < len(text) && isDigit(text[d]) {
			return text[i : i+sign], text[d:number(text, d)], true
		}
	}
	return "", "", false
}

// number is the end of \d+(?:[.,]\d{1,2})? at i, a digit: as many digits
// as there are, then a separator and up to two digits when a digit follows
// it (any shorter reading leaves a digit or a separator next, which
// neither a space nor a currency word starts with).
func number(text string, i int) int {
	end := digitsEnd(text, i)
	if end+1 < len(text) && (text[end] == '.' || text[end] == ',') && isDigit(text[end+1]) {
		end += 2
		if end < len(text) && isDigit(text[end]) {
			end++
		}
	}
	return end
}

func digitsEnd(text string, i int) int {
	for i < len(text) && isDigit(text[i]) {
		i++
	}
	return i
}

// isoDate finds the leftmost YYYY-MM-DD that stands as a word.
func isoDate(text string) (string, bool) {
	for i := 0; i+10 <= len(text); i++ {
		d := text[i : i+10]
		if (i == 0 || !isWordByte(text[i-1])) && (i+10 == len(text) || !isWordByte(text[i+10])) &&
			isDigit(d[0]) && isDigit(d[1]) && isDigit(d[2]) && isDigit(d[3]) && d[4] == '-' &&
			isDigit(d[5]) && isDigit(d[6]) && d[7] == '-' && isDigit(d[8]) && isDigit(d[9]) {
			return d, true
		}
	}
	return "", false
}

// hasWord reports whether word (of ASCII word characters) stands in s as
// a word: \bword\b.
func hasWord(s, word string) bool {
	for from := 0; ; {
		j := strings.Index(s[from:], word)
		if j < 0 {
			return false
		}
		j += from
		if (j == 0 || !isWordByte(s[j-1])) && (j+len(word) == len(s) || !isWordByte(s[j+len(word)])) {
			return true
		}
		from = j + 1
	}
}

// vendorWord finds the leftmost "my|a|the|this <word> receipt|bill|...",
// and returns the word.
func vendorWord(text string) (string, bool) {
	for i := 0; i < len(text); i++ {
		if i > 0 && isWordByte(text[i-1]) {
			continue // no \b before
		}
		// At most one of the words starts here: they differ early.
		after := -1
		for _, w := range [...]string{"my", "a", "the", "this"} {
			if n, ok := foldWord(text, i, w); ok {
				after = n
				break
			}
		}
		if after < 0 {
			continue
		}
		start := skipSpace(text, after)
		if start == after {
			continue
		}
		end := start
		for {
			n := letter(text, end)
			if n == end {
				break
			}
			end = n
		}
		if end == start {
			continue
		}
		noun := skipSpace(text, end)
		if noun == end {
			continue
		}
		for _, w := range [...]string{"receipt", "bill", "invoice", "ticket", "fare"} {
			if _, ok := foldWord(text, noun, w); ok {
				return text[start:end], true
			}
		}
	}
	return "", false
}

// foldWord matches word (lower-case ASCII, a trailing "s?" optional and
// taken when there) at text[i:] as (?i) matches it, and returns where the
// match ends.
func foldWord(text string, i int, word string) (int, bool) {
	optional := strings.HasSuffix(word, "s?")
	if optional {
		word = word[:len(word)-1]
	}
	for k := 0; k < len(word); k++ {
		n, ok := foldByte(text, i, word[k])
		if !ok {
			if optional && k == len(word)-1 {
				return i, true
			}
			return 0, false
		}
		i = n
	}
	return i, true
}

// foldByte matches the ASCII character c at text[i:] as (?i) matches it:
// either case of a letter, ſ for s and the Kelvin sign for k; any other
// byte as it is.
func foldByte(text string, i int, c byte) (int, bool) {
	if i >= len(text) {
		return 0, false
	}
	switch b := text[i]; {
	case b == c:
		return i + 1, true
	case 'a' <= c && c <= 'z' && b == c-'a'+'A':
		return i + 1, true
	case c == 's' && strings.HasPrefix(text[i:], longS):
		return i + len(longS), true
	case c == 'k' && strings.HasPrefix(text[i:], kelvin):
		return i + len(kelvin), true
	}
	return 0, false
}

// letter is the end of the (?i)[a-z] at text[i:], i when there is none.
func letter(text string, i int) int {
	if i >= len(text) {
		return i
	}
	if b := text[i]; 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' {
		return i + 1
	}
	if strings.HasPrefix(text[i:], longS) {
		return i + len(longS)
	}
	if strings.HasPrefix(text[i:], kelvin) {
		return i + len(kelvin)
	}
	return i
}

// longS (ſ) and kelvin (the Kelvin sign) are what (?i) matches for s and
// k beside their two ASCII cases.
const (
	longS  = "\u017f"
	kelvin = "\u212a"
)

func skipSpace(text string, i int) int {
	for i < len(text) {
		switch text[i] {
		case ' ', '\t', '\n', '\f', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isWordByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}
