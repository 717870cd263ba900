package expense

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// The regular expressions Parse's reading is written down as, and the
// reading through them that Parse did before it was written by hand:
// FuzzParseReadsWhatTheRegexpsRead holds the two to the same expense.
var (
	reAmountAfter  = regexp.MustCompile(`(?i)(\d+(?:[.,]\d{1,2})?)\s*(euros?|eur|€|dollars?|usd|\$|pounds?|gbp|£|chf|francs?)`)
	reAmountBefore = regexp.MustCompile(`(?i)(€|\$|£)\s*(\d+(?:[.,]\d{1,2})?)`)
	reISODate      = regexp.MustCompile(`\b(\d{4}-\d{2}-\d{2})\b`)
	reWeekdays     = func() (out [7]*regexp.Regexp) {
		for d := time.Sunday; d <= time.Saturday; d++ {
			out[d] = regexp.MustCompile(`\b` + strings.ToLower(d.String()) + `\b`)
		}
		return out
	}()
	reVendor = regexp.MustCompile(`(?i)\b(?:my|a|the|this)\s+([a-z]+)\s+(?:receipt|bill|invoice|ticket|fare)`)
)

func parseByRegexps(text string, today time.Time) Expense {
	var e Expense
	if m := reAmountAfter.FindStringSubmatch(text); m != nil {
		e.Amount = parseAmount(m[1])
		e.Currency = currencies[strings.ToLower(m[2])]
	} else if m := reAmountBefore.FindStringSubmatch(text); m != nil {
		e.Amount = parseAmount(m[2])
		e.Currency = currencies[strings.ToLower(m[1])]
	}
	lower := strings.ToLower(text)
	if m := reISODate.FindStringSubmatch(text); m != nil {
		if _, err := time.Parse(time.DateOnly, m[1]); err == nil {
			e.Date = m[1]
		}
	} else if strings.Contains(lower, "yesterday") {
		e.Date = today.AddDate(0, 0, -1).Format(time.DateOnly)
	} else if strings.Contains(lower, "today") {
		e.Date = today.Format(time.DateOnly)
	} else {
		for d := time.Sunday; d <= time.Saturday; d++ {
			if reWeekdays[d].MatchString(lower) {
				back := (int(today.Weekday()) - int(d) + 7) % 7
				e.Date = today.AddDate(0, 0, -back).Format(time.DateOnly)
				break
			}
		}
	}
	if m := reVendor.FindStringSubmatch(text); m != nil {
		w := strings.ToLower(m[1])
		e.Vendor = strings.ToUpper(w[:1]) + w[1:]
	}
	return e
}

// parseSeeds are requests with every form the expressions read, and the
// near misses around them (a third decimal, a digit run before the amount,
// a date inside a word, an invalid date, a weekday inside a word, the
// characters (?i) folds beyond ASCII, spaces \s does not take).
var parseSeeds = []string{
	"File my taxi receipt from Tuesday, 42 euros",
	"File my hotel bill, €180.50, 2026-11-20",
	"file the train ticket from yesterday 12,40 GBP",
	"File my taxi receipt from Sunday, 9 dollars",
	"File my taxi receipt",
	"this DINNER invoice today: $ 31.5 and 12.345 eur",
	"1.234eur 12 34 USD x2026-11-20 2026-13-45 tuesdays monday_ friday",
	"a Taxi\tFare 5\u00a0euro 7 EUROſ 8 euroS 9 eur0s",
	"thiſ taxi receipt, the ſKy ticKet, a ab\u212a Ticket 3,9chf 4 Francs",
	"€ 12 £7.25 $\n3 pounds? 10 Pound 11 pounds 1,5 \u212achf",
	"my\u000btaxi receipt my\u000ctaxi\u000creceipts 2026-02-29 2024-02-29",
	"ámy taxi receipt _the taxi receipt Ümy x bill",
	"",
	"42",
	"€",
	"my  taxi  ",
	"1. eur 1.e 1,eur 123,45678 gbp",
	"the ticket bill invoice fare receipt my my my bill",
	"\xff\xfe my \xc5 taxi receipt 2026-01-01\xff",
}

// TestParseReadsWhatTheRegexpsRead: every seed is read by hand as the
// expressions read it.
func TestParseReadsWhatTheRegexpsRead(t *testing.T) {
	today := time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)
	for _, s := range parseSeeds {
		if got, want := Parse(s, today), parseByRegexps(s, today); got != want {
			t.Errorf("Parse(%q) = %+v, the expressions read %+v", s, got, want)
		}
	}
}

func FuzzParseReadsWhatTheRegexpsRead(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add(s, byte(0))
	}
	f.Fuzz(func(t *testing.T, s string, day byte) {
		today := time.Date(2026, 11, 22+int(day%7), 15, 0, 0, 0, time.UTC)
		if got, want := Parse(s, today), parseByRegexps(s, today); got != want {
			t.Fatalf("Parse(%q) = %+v, the expressions read %+v", s, got, want)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	today := time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)
	b.Run("hand", func(b *testing.B) {
		for range b.N {
			_ = Parse("File my taxi receipt from Tuesday, 42 euros", today)
		}
	})
	b.Run("regexps", func(b *testing.B) {
		for range b.N {
			_ = parseByRegexps("File my taxi receipt from Tuesday, 42 euros", today)
		}
	})
}
