// Package pack is how the SQLite store keeps JSON on disk: the same bytes
// with what the reader knows already left out. A packed value carries the
// task's own ID and context ID as one byte each, a UUID (the SDK's and
// the engine's message, context and artifact IDs, time-ordered task IDs)
// as 17 bytes instead of 36, a phrase of A2A's JSON that recurs in every
// task (`"role":"ROLE_AGENT"`) as one or two bytes, an RFC 3339 time as
// about 10 bytes instead of 24 to 30, and a run of bytes found in a
// reference value the reader holds (the log entry a task's status came
// from) as its offset and length.
//
// JSON holds no byte below 0x20 (a control character in a string is
// escaped), so those bytes are the tokens. A value that holds one anyway,
// or that is empty, is stored as it is, behind a 0x00 when it starts with
// a byte below 0x20, so that every input comes back: Unpack(Pack(b)) == b
// for every b (FuzzRoundTrip). Bytes that were never packed (a row written
// before the store packed anything) start with no token and read back as
// they are.
//
// The format is stored: a token, a phrase's number and the meaning of
// each byte never change; new phrases are only ever added at the end.
package pack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"strconv"
	"sync"
)

// Known is what a value is packed against: what its reader has already.
type Known struct {
	TaskID    string // the task's ID; "" when the reader does not know it
	ContextID string // the task's context ID; "" likewise
	Ref       []byte // a value the reader holds, unpacked; nil for none

	// index finds runs of Ref (Index); nil: Pack searches Ref itself.
	index *Index
}

// Index finds where in a reference value a run starts, for Pack: the
// places in it a run is looked for (a '"', '{' or '[', where JSON values
// and keys start) by the hash of their first minRef bytes. One Index
// serves every value packed against the same Ref.
type Index struct {
	slots [indexSlots]uint16 // a position+1 in Ref, 0 for none
}

const indexSlots = 1024

var indexes = sync.Pool{New: func() any { return new(Index) }}

// WithIndex returns k with an Index of its Ref, for packing several values
// against it; Release gives the Index back once they are packed.
func (k Known) WithIndex() Known {
	if len(k.Ref) < minRef {
		return k
	}
	x := indexes.Get().(*Index)
	x.slots = [indexSlots]uint16{}
	ref := k.Ref[:min(len(k.Ref), 0xffff)]
	x.add(ref, 0)
	// The places from 1 to end-1, in order, eight bytes at a time: a
	// word's bytes equal to one of the three are flagged (and a few
	// others, above a flagged one: each is checked).
	end := len(ref) - minRef + 1
	i := 1
	for ; i+8 <= end; i += 8 {
		w := binary.LittleEndian.Uint64(ref[i:])
		m := zeroBytes(w^('"'*ones)) | zeroBytes(w^('{'*ones)) | zeroBytes(w^('['*ones))
		for ; m != 0; m &= m - 1 {
			if j := i + bits.TrailingZeros64(m)/8; runStart[ref[j]] {
				x.add(ref, j)
			}
		}
	}
	for ; i < end; i++ {
		if runStart[ref[i]] {
			x.add(ref, i)
		}
	}
	k.index = x
	return k
}

// add indexes the run of ref at i, in the first free slot from its hash's
// on (linear probing; eight full: not indexed).
func (x *Index) add(ref []byte, i int) {
	h := slotOf(ref[i:])
	for n := 0; n < 8 && x.slots[h] != 0; n++ {
		h = (h + 1) % indexSlots
	}
	if x.slots[h] == 0 {
		x.slots[h] = uint16(i + 1)
	}
}

// ones is a word of bytes 0x01.
const ones = 0x0101010101010101

// zeroBytes flags (their top bit) the bytes of w that are 0, and perhaps
// some above one that is.
func zeroBytes(w uint64) uint64 { return (w - ones) &^ w & (0x80 * ones) }

// runStart says where, besides a value's first byte, a run from a Ref is
// looked for: where JSON values and keys start.
var runStart = [256]bool{'"': true, '{': true, '[': true}

// Release returns k's Index, if it has one, for another WithIndex.
func (k Known) Release() {
	if k.index != nil {
		indexes.Put(k.index)
	}
}

func slotOf(b []byte) int {
	return int((binary.LittleEndian.Uint64(b) * 0x9E3779B97F4A7C15) >> 54) // 10 bits
}

// longestIndexed is longestIn through k's Index.
func (x *Index) longest(ref, b []byte) (off, n int) {
	if len(b) < minRef {
		return 0, 0
	}
	head := b[:minRef]
	h := slotOf(head)
	for probe := 0; probe < 8; probe++ {
		p := int(x.slots[h])
		if p == 0 {
			break
		}
		j := p - 1
		if string(ref[j:j+minRef]) == string(head) {
			m := minRef
			for j+m < len(ref) && m < len(b) && ref[j+m] == b[m] {
				m++
			}
			if m > n {
				off, n = j, m
			}
		}
		h = (h + 1) % indexSlots
	}
	return off, n
}

const (
	tokRaw     = 0x00 // first byte only: the rest is the value as it is
	tokPacked  = 0x01 // first byte only: the rest is packed
	tokTask    = 0x02 // Known.TaskID
	tokContext = 0x03 // Known.ContextID
	tokUUID    = 0x04 // 16 bytes: a lowercase UUID
	tokRef     = 0x05 // uvarint offset, uvarint length: Known.Ref[offset:offset+length]
	tokPhrase2 = 0x06 // one byte: phrases[numShort+that byte]
	tokTime    = 0x07 // a time: see putTime
	tokShort   = 0x08 // 0x08..0x1f: phrases[b-tokShort]
	numShort   = 0x20 - tokShort

	// minRef is the shortest run copied from Known.Ref: a shorter one
	// costs about as much as its bytes.
	minRef = 8
)

// phrases recur in the JSON of every task. Stored: never reorder or
// change one, only add at the end (at most numShort+256).
var phrases = []string{
	// the 24 that take one byte
	`{"contextId":"`,
	`","taskId":"`,
	`{"messageId":"`,
	`","contextId":"`,
	`"status":{"message":{"messageId":"`,
	`,"state":"TASK_STATE_`,
	`"status":{"state":"TASK_STATE_`,
	`INPUT_REQUIRED`,
	`WORKING`,
	`COMPLETED`,
	`","timestamp":"`,
	`,"parts":[{"text":"`,
	`"role":"ROLE_USER"`,
	`"role":"ROLE_AGENT"`,
	`"mediaType":"application/json"`,
	`,"extensions":["https://askpoint.dev/ext/question/v1"]`,
	`{"data":{`,
	`{"artifact":{"artifactId":"`,
	`,"taskId":"`,
	`"questionId":"`,
	`"answerSchema":{"properties":{`,
	`"type":"string"`,
	`"type":"object"`,
	`"expires":"`,
	// two bytes each
	`,"parts":[{"data":{`,
	`"options":[{"value":"`,
	`"},{"value":"`,
	`,"required":[`,
	`"text":"`,
	`"name":"`,
	`"pattern":"`,
	`"attempt":`,
	`"maxAttempts":`,
	`"onExpiry":"`,
	`"asked":"`,
	`"question":"`,
	`"fresh":"`,
	`FAILED`,
	`CANCELED`,
	`REJECTED`,
	`AUTH_REQUIRED`,
	`SUBMITTED`,
	`"metadata":{`,
	`"referenceTaskIds":[`,
	`"description":"`,
	`"append":true`,
	`"final":true`,
	`"url":"`,
	`"raw":"`,
	`"filename":"`,
	`"TASK_STATE_`,
	`"lastChunk":true`,
	`"}],"role":"ROLE_AGENT","taskId":"`,
	`"}],"role":"ROLE_USER","taskId":"`,
	`"},"mediaType":"application/json"}],"role":"ROLE_USER","taskId":"`,
}

// byTwo lists, for each first two bytes, the phrases starting with them,
// the longest first: phrases[twoLists[byTwo[b0<<8|b1]][i]], list 0 empty.
// A table, not a map: Pack looks it up at every '"' and ',' of a value.
var (
	byTwo    [1 << 16]uint8
	twoLists = [][]uint8{nil}
)

// hasFirst says which bytes some phrase starts with.
var hasFirst [256]bool

// plain says which bytes start nothing Pack replaces, whatever it packs
// against (but for the first bytes of the IDs it knows, which it checks
// itself): not a run's start ('"', '{', '['), no hex digit (a UUID's or
// a time's first byte), no phrase's first byte, no control byte.
var plain [256]bool

func init() {
	if len(phrases) > numShort+256 {
		panic("pack: too many phrases")
	}
	for _, p := range phrases {
		if len(p) < 2 {
			panic("pack: a phrase of less than two bytes")
		}
	}
	for i, p := range phrases {
		key := uint16(p[0])<<8 | uint16(p[1])
		if byTwo[key] == 0 {
			byTwo[key] = uint8(len(twoLists))
			twoLists = append(twoLists, nil)
		}
		twoLists[byTwo[key]] = append(twoLists[byTwo[key]], uint8(i))
		hasFirst[p[0]] = true
	}
	for c := range plain {
		b := byte(c)
		plain[c] = b >= 0x20 && b != '"' && b != '{' && b != '[' && !isHex(b) && !hasFirst[b]
	}
	if len(twoLists) > 256 {
		panic("pack: too many first two bytes")
	}
	for _, l := range twoLists {
		for i := 1; i < len(l); i++ { // insertion sort, longest first
			for j := i; j > 0 && len(phrases[l[j]]) > len(phrases[l[j-1]]); j-- {
				l[j], l[j-1] = l[j-1], l[j]
			}
		}
	}
}

// Pack appends the packed form of b to dst. An empty b packs to nothing.
func Pack(dst, b []byte, k Known) []byte {
	if len(b) == 0 {
		return dst
	}
	if hasControl(b) {
		if b[0] < 0x20 {
			dst = append(dst, tokRaw)
		}
		return append(dst, b...)
	}
	dst = append(dst, tokPacked)
	// The first bytes of k's IDs (0 for none: b holds no control byte).
	var t0, c0 byte
	if k.TaskID != "" {
		t0 = k.TaskID[0]
	}
	if k.ContextID != "" {
		c0 = k.ContextID[0]
	}
	for i := 0; i < len(b); {
		c := b[i]
		if i > 0 && plain[c] && c != t0 && c != c0 {
			// A run of bytes none of which can start a token is copied
			// in one append: each would have come out as itself.
			j := i + 1
			for j < len(b) && plain[b[j]] && b[j] != t0 && b[j] != c0 {
				j++
			}
			dst = append(dst, b[i:j]...)
			i = j
			continue
		}
		if len(k.Ref) >= minRef && (runStart[c] || i == 0) {
			var off, n int
			if k.index != nil {
				off, n = k.index.longest(k.Ref, b[i:])
			} else {
				off, n = longestIn(k.Ref, b[i:])
			}
			if n >= minRef {
				dst = append(dst, tokRef)
				dst = binary.AppendUvarint(dst, uint64(off))
				dst = binary.AppendUvarint(dst, uint64(n))
				i += n
				continue
			}
		}
		if k.TaskID != "" && c == k.TaskID[0] && bytes.HasPrefix(b[i:], []byte(k.TaskID)) {
			dst = append(dst, tokTask)
			i += len(k.TaskID)
			continue
		}
		if k.ContextID != "" && c == k.ContextID[0] && bytes.HasPrefix(b[i:], []byte(k.ContextID)) {
			dst = append(dst, tokContext)
			i += len(k.ContextID)
			continue
		}
		if isHex(c) {
			if u, ok := parseUUID(b[i:]); ok {
				dst = append(dst, tokUUID)
				dst = append(dst, u[:]...)
				i += 36
				continue
			}
		}
		if c >= '0' && c <= '9' {
			if d, n := putTime(dst, b[i:]); n > 0 {
				dst = d
				i += n
				continue
			}
		}
		if p, ok := phraseAt(b[i:]); ok {
			if p < numShort {
				dst = append(dst, byte(tokShort+p))
			} else {
				dst = append(dst, tokPhrase2, byte(p-numShort))
			}
			i += len(phrases[p])
			continue
		}
		dst = append(dst, c)
		i++
	}
	return dst
}

// hasControl says whether b holds a byte below 0x20, eight bytes at a
// time: a byte x of w is below 0x20 when x-0x20 borrows (its top bit set
// where x's is not).
func hasControl(b []byte) bool {
	const lo, hi = 0x2020202020202020, 0x8080808080808080
	for ; len(b) >= 8; b = b[8:] {
		w := binary.LittleEndian.Uint64(b)
		if (w-lo)&^w&hi != 0 {
			return true
		}
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// phraseAt returns the longest phrase b starts with.
func phraseAt(b []byte) (int, bool) {
	if len(b) < 2 || !hasFirst[b[0]] {
		return 0, false
	}
	for _, p := range twoLists[byTwo[uint16(b[0])<<8|uint16(b[1])]] {
		ph := phrases[p]
		if len(b) >= len(ph) && string(b[:len(ph)]) == ph {
			return int(p), true
		}
	}
	return 0, false
}

// longestIn returns the longest prefix of b that occurs in ref, among the
// first few places ref holds its first minRef bytes.
func longestIn(ref, b []byte) (off, n int) {
	if len(b) < minRef {
		return 0, 0
	}
	head := b[:minRef]
	for from, tries := 0, 0; tries < 4 && from < len(ref); tries++ {
		j := bytes.Index(ref[from:], head)
		if j < 0 {
			break
		}
		j += from
		m := minRef
		for j+m < len(ref) && m < len(b) && ref[j+m] == b[m] {
			m++
		}
		if m > n {
			off, n = j, m
		}
		from = j + 1
	}
	return off, n
}

// Len returns the length of the value p packs (what Unpack appends), so
// that a reader can make one buffer for several values; k must be what p
// was packed against.
func Len(p []byte, k Known) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	switch p[0] {
	case tokRaw:
		return len(p) - 1, nil
	case tokPacked:
	default:
		return len(p), nil
	}
	n := 0
	for i := 1; i < len(p); {
		c := p[i]
		i++
		switch {
		case c >= 0x20:
			n++
		case c == tokTask:
			n += len(k.TaskID)
		case c == tokContext:
			n += len(k.ContextID)
		case c == tokUUID:
			if len(p)-i < 16 {
				return 0, ErrCorrupt
			}
			n += 36
			i += 16
		case c == tokRef:
			off, n1 := binary.Uvarint(p[i:])
			if n1 <= 0 {
				return 0, ErrCorrupt
			}
			l, n2 := binary.Uvarint(p[i+n1:])
			if n2 <= 0 || off > uint64(len(k.Ref)) || l > uint64(len(k.Ref))-off {
				return 0, ErrCorrupt
			}
			n += int(l)
			i += n1 + n2
		case c == tokTime:
			secs, n1 := binary.Varint(p[i:])
			if n1 <= 0 || n1 >= len(p)-i || secs < 0 || secs > 253402300799 {
				return 0, ErrCorrupt
			}
			digits := int(p[i+n1])
			frac, n2 := binary.Uvarint(p[i+n1+1:])
			if n2 <= 0 || digits > 9 {
				return 0, ErrCorrupt
			}
			n += 20 // 2006-01-02T15:04:05Z
			if digits > 0 {
				n += 1 + max(digits, len(strconv.FormatUint(frac, 10)))
			}
			i += n1 + 1 + n2
		case c == tokPhrase2:
			if i >= len(p) || numShort+int(p[i]) >= len(phrases) {
				return 0, ErrCorrupt
			}
			n += len(phrases[numShort+int(p[i])])
			i++
		case c >= tokShort:
			n += len(phrases[c-tokShort])
		default:
			return 0, ErrCorrupt
		}
	}
	return n, nil
}

// ErrCorrupt is what Unpack returns for bytes Pack did not make.
var ErrCorrupt = errors.New("pack: corrupt value")

// Unpack appends the value p packs to dst; k must be what it was packed
// against.
func Unpack(dst, p []byte, k Known) ([]byte, error) {
	if len(p) == 0 {
		return dst, nil
	}
	switch p[0] {
	case tokRaw:
		return append(dst, p[1:]...), nil
	case tokPacked:
	default:
		return append(dst, p...), nil
	}
	for i := 1; i < len(p); {
		c := p[i]
		i++
		switch {
		case c >= 0x20:
			dst = append(dst, c)
		case c == tokTask:
			dst = append(dst, k.TaskID...)
		case c == tokContext:
			dst = append(dst, k.ContextID...)
		case c == tokUUID:
			if len(p)-i < 16 {
				return nil, ErrCorrupt
			}
			dst = appendUUID(dst, p[i:i+16])
			i += 16
		case c == tokRef:
			off, n1 := binary.Uvarint(p[i:])
			if n1 <= 0 {
				return nil, ErrCorrupt
			}
			l, n2 := binary.Uvarint(p[i+n1:])
			if n2 <= 0 || off > uint64(len(k.Ref)) || l > uint64(len(k.Ref))-off {
				return nil, ErrCorrupt
			}
			dst = append(dst, k.Ref[off:off+l]...)
			i += n1 + n2
		case c == tokTime:
			d, n, err := appendTime(dst, p[i:])
			if err != nil {
				return nil, err
			}
			dst = d
			i += n
		case c == tokPhrase2:
			if i >= len(p) || numShort+int(p[i]) >= len(phrases) {
				return nil, ErrCorrupt
			}
			dst = append(dst, phrases[numShort+int(p[i])]...)
			i++
		case c >= tokShort:
			dst = append(dst, phrases[c-tokShort]...)
		default:
			return nil, ErrCorrupt
		}
	}
	return dst, nil
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// parseUUID reads a lowercase UUID (8-4-4-4-12 hex digits) at the start
// of b.
func parseUUID(b []byte) (u [16]byte, ok bool) {
	if len(b) < 36 || b[8] != '-' || b[13] != '-' || b[18] != '-' || b[23] != '-' {
		return u, false
	}
	j := 0
	for i := 0; i < 36; i += 2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i--
			continue
		}
		hi, lo := unhex(b[i]), unhex(b[i+1])
		if hi > 15 || lo > 15 {
			return u, false
		}
		u[j] = hi<<4 | lo
		j++
	}
	return u, true
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return 255
}

const hexDigits = "0123456789abcdef"

func appendUUID(dst, u []byte) []byte {
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&15])
	}
	return dst
}

// A time is packed when it is written as Go's time.RFC3339Nano writes a
// UTC time, "2006-01-02T15:04:05.999999999Z" (a fraction of 0 to 9
// digits, no trailing zero): tokTime, then the seconds since 1970 as a
// varint, then a byte with the number of fraction digits, then the
// fraction as a uvarint. Anything else stays as it is.

// putTime appends the packed time at the start of b to dst and returns
// how many bytes of b it took, 0 when b starts with no such time.
func putTime(dst, b []byte) ([]byte, int) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return dst, 0
	}
	num := func(s []byte) (int, bool) {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	y, ok1 := num(b[0:4])
	mo, ok2 := num(b[5:7])
	d, ok3 := num(b[8:10])
	h, ok4 := num(b[11:13])
	mi, ok5 := num(b[14:16])
	s, ok6 := num(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || s > 59 || y < 1970 {
		return dst, 0
	}
	n := 19
	digits, frac := 0, 0
	if b[n] == '.' {
		n++
		for n < len(b) && b[n] >= '0' && b[n] <= '9' && digits < 9 {
			frac = frac*10 + int(b[n]-'0')
			digits++
			n++
		}
		if digits == 0 || b[n-1] == '0' {
			return dst, 0
		}
	}
	if n >= len(b) || b[n] != 'Z' {
		return dst, 0
	}
	n++
	secs := int64(days(y, mo, d))*86400 + int64(h*3600+mi*60+s)
	dst = append(dst, tokTime)
	dst = binary.AppendVarint(dst, secs)
	dst = append(dst, byte(digits))
	dst = binary.AppendUvarint(dst, uint64(frac))
	return dst, n
}

// appendTime writes back the time p starts with (after its tokTime).
func appendTime(dst, p []byte) ([]byte, int, error) {
	secs, n1 := binary.Varint(p)
	if n1 <= 0 || n1 >= len(p) || secs < 0 || secs > 253402300799 {
		return nil, 0, ErrCorrupt
	}
	digits := int(p[n1])
	frac, n2 := binary.Uvarint(p[n1+1:])
	if n2 <= 0 || digits > 9 {
		return nil, 0, ErrCorrupt
	}
	y, mo, d := civil(int(secs / 86400))
	rem := int(secs % 86400)
	dst = appendInt(dst, y, 4)
	dst = append(dst, '-')
	dst = appendInt(dst, mo, 2)
	dst = append(dst, '-')
	dst = appendInt(dst, d, 2)
	dst = append(dst, 'T')
	dst = appendInt(dst, rem/3600, 2)
	dst = append(dst, ':')
	dst = appendInt(dst, rem/60%60, 2)
	dst = append(dst, ':')
	dst = appendInt(dst, rem%60, 2)
	if digits > 0 {
		dst = append(dst, '.')
		dst = appendInt(dst, int(frac), digits)
	}
	return append(dst, 'Z'), n1 + 1 + n2, nil
}

func appendInt(dst []byte, v, width int) []byte {
	s := strconv.Itoa(v)
	for range width - len(s) {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// days is the number of days from 1970-01-01 to y-m-d (proleptic
// Gregorian calendar), civil its inverse.
func days(y, m, d int) int {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func civil(z int) (y, m, d int) {
	z += 719468
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}
