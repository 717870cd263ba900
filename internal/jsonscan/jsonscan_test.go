package jsonscan

import "testing"

func TestStringEnd(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{`"a"`, 3},
		{`"a" , 1`, 3},
		{`"a\"b"x`, 6},
		{`"a\\"x`, 5},
		{`""`, 2},
		{`"abc`, -1},
		{`"a\"`, -1},
		{`"\`, -1},
	} {
		if got := StringEnd([]byte(c.in), 0); got != c.want {
			t.Errorf("StringEnd(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}
