package bench

// schedule is the order in which the table's n servers take the load,
// round by round: rounds come in pairs, the first of a pair the servers
// rotated by the pair's number (0, 1, ..., n-1, then 1, 2, ..., 0, ...) and
// the second the first reversed (ABBA for two servers). In each pair every
// server's two windows sit at the same mean time, so a load on the machine
// that rises or falls steadily over the pair weighs on every server alike;
// over 2n rounds every server is first twice and last twice, so none gains
// by running after the idle gap, or by following the same neighbour, more
// often than another (balanced reports whether rounds did that).
func schedule(n, rounds int) [][]int {
	out := make([][]int, rounds)
	for r := range out {
		order := make([]int, n)
		for i := range order {
			order[i] = (r/2 + i) % n
		}
		if r%2 == 1 {
			for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
				order[i], order[j] = order[j], order[i]
			}
		}
		out[r] = order
	}
	return out
}

// defaultRounds is the number of rounds that balances the order of n
// servers (schedule): 2n, and 2 for a single server.
func defaultRounds(n int) int { return 2 * max(n, 1) }

// balanced reports whether every server is first in the same number of
// rounds and last in the same number, and holds each position of the
// order equally often.
func balanced(order [][]int, n int) bool {
	if n == 0 {
		return true
	}
	at := make([][]int, n) // at[position][server]: rounds
	for p := range at {
		at[p] = make([]int, n)
	}
	for _, round := range order {
		for p, s := range round {
			at[p][s]++
		}
	}
	for p := range at {
		for s := range at[p] {
			if at[p][s] != at[p][0] {
				return false
			}
		}
	}
	return true
}
