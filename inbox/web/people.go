package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// MinTokenLen is the shortest login token accepted.
const MinTokenLen = 16

// Person is someone who may log in to the web inbox.
type Person struct {
	Name  string
	Token string // what they log in with
	Email string // where new questions and reminders are sent ("" for none)
	// Callers limits the questions the person sees to those asked on
	// behalf of these callers (askpoint ask --caller); empty: all.
	Callers []string
}

// sees says whether the person may see and answer a question asked on
// behalf of caller.
func (p *Person) sees(caller string) bool {
	return len(p.Callers) == 0 || slices.Contains(p.Callers, caller)
}

// LoadPeople reads a people file: a JSON object from each person's name to
// either their token, or an object {"token": ..., "email": ..., "callers":
// [...]}. Tokens must be at least MinTokenLen characters and distinct.
func LoadPeople(path string) ([]Person, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("people file: %w", err)
	}
	people, err := ParsePeople(raw)
	if err != nil {
		return nil, fmt.Errorf("people file %s: %w", path, err)
	}
	return people, nil
}

// ParsePeople reads the people file's contents (see LoadPeople).
func ParsePeople(raw []byte) ([]Person, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf(`not a JSON object of {"name": "token"} or {"name": {"token": ..., "email": ...}}: %v`, err)
	}
	if len(m) == 0 {
		return nil, errors.New("it names nobody")
	}
	var out []Person
	seen := map[string]string{}
	for name, v := range m {
		p := Person{Name: name}
		if err := json.Unmarshal(v, &p.Token); err != nil {
			var obj struct {
				Token   string   `json:"token"`
				Email   string   `json:"email"`
				Callers []string `json:"callers"`
			}
			if err := json.Unmarshal(v, &obj); err != nil {
				return nil, fmt.Errorf("%s: expected a token or {\"token\": ..., \"email\": ...}: %v", name, err)
			}
			p.Token, p.Email, p.Callers = obj.Token, obj.Email, obj.Callers
		}
		if strings.TrimSpace(name) == "" {
			return nil, errors.New("a person has an empty name")
		}
		if len(p.Token) < MinTokenLen {
			return nil, fmt.Errorf("%s: the token has %d characters; at least %d are needed", name, len(p.Token), MinTokenLen)
		}
		if other, dup := seen[p.Token]; dup {
			return nil, fmt.Errorf("%s and %s have the same token", other, name)
		}
		if p.Email != "" && (strings.ContainsAny(p.Email, "\r\n<>, ") || !strings.Contains(p.Email, "@")) {
			return nil, fmt.Errorf("%s: %q is not an email address", name, p.Email)
		}
		seen[p.Token] = name
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Person) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// sessions issues and checks session cookies and CSRF tokens. A session
// is a random ID the inbox keeps (until it expires, the person logs out,
// or the inbox restarts), sent in a cookie with an HMAC under a key made
// at start-up; the CSRF token is an HMAC of the ID.
type sessions struct {
	key    []byte
	people []Person
	secure bool
	ttl    time.Duration
	now    func() time.Time
	// cookie and path name the site's cookie: one name per site (its
	// origin and base), so that two on one host (an inbox and a server's
	// page on other ports: cookies do not tell ports apart) keep their own.
	cookie, path string

	mu       sync.Mutex
	live     map[string]liveSession // by session ID
	links    map[string]grant       // an email's one-time links, by their token's digest
	attempts map[string]*attempts   // failed logins, by client address
}

// Failed logins are bounded per client address: each login takes one of
// loginBurst attempts, a failed one keeps it, and one comes back every
// loginRefill. With none left every login from the address is refused,
// the right token too (checking it would tell a guesser when it is
// right), until one comes back.
const (
	loginBurst   = 10
	loginRefill  = 3 * time.Second
	maxAddresses = 4096 // addresses with failed logins kept track of
)

// attempts are an address's login attempts left, as of at.
type attempts struct {
	left float64
	at   time.Time
}

// liveSession is whose session is and until when.
type liveSession struct {
	person string
	until  time.Time
	item   int64 // the one question an email's link opened it for (0: all of the person's)
}

// maxSessionsPerPerson bounds the sessions one person holds: a login past
// it ends their oldest.
const maxSessionsPerPerson = 64

// newSessions makes the sessions of the site at origin (scheme://host:port)
// under base ("" for the root).
func newSessions(people []Person, origin, base string, now func() time.Time) *sessions {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic("web: no randomness for the session key: " + err.Error())
	}
	site := sha256.Sum256([]byte(origin + base))
	return &sessions{key: key, people: people, secure: strings.HasPrefix(origin, "https://"), ttl: 12 * time.Hour, now: now,
		cookie: "askpoint_inbox_" + hex.EncodeToString(site[:4]), path: strings.TrimSuffix(base, "/") + "/", live: map[string]liveSession{}, attempts: map[string]*attempts{}}
}

func (s *sessions) mac(parts ...string) string {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte(strings.Join(parts, "\x00")))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// attempt takes one of addr's login attempts, or says how long until it
// has one; done gives it back after a login that succeeded.
func (s *sessions) attempt(addr string) (done func(ok bool), wait time.Duration) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.attempts[addr]
	if a == nil {
		if len(s.attempts) >= maxAddresses {
			for k, o := range s.attempts { // forget the addresses that have all their attempts again
				if o.left+now.Sub(o.at).Seconds()/loginRefill.Seconds() >= loginBurst {
					delete(s.attempts, k)
				}
			}
		}
		if len(s.attempts) >= maxAddresses {
			return nil, loginRefill
		}
		a = &attempts{left: loginBurst, at: now}
		s.attempts[addr] = a
	}
	a.left = min(loginBurst, a.left+now.Sub(a.at).Seconds()/loginRefill.Seconds())
	a.at = now
	if a.left < 1 {
		return nil, time.Duration((1 - a.left) * float64(loginRefill))
	}
	a.left--
	return func(ok bool) {
		if ok {
			s.mu.Lock()
			defer s.mu.Unlock()
			a.left = min(loginBurst, a.left+1)
		}
	}, 0
}

// login returns the person whose token this is.
func (s *sessions) login(token string) *Person {
	var found *Person
	for i := range s.people {
		// Compare with every token, so that timing says nothing of which.
		if subtle.ConstantTimeCompare([]byte(token), []byte(s.people[i].Token)) == 1 {
			found = &s.people[i]
		}
	}
	return found
}

func (s *sessions) person(name string) *Person {
	for i := range s.people {
		if s.people[i].Name == name {
			return &s.people[i]
		}
	}
	return nil
}

// session is a logged-in person's session.
type session struct {
	person *Person
	id     string
	item   int64 // the one question the session is for (0: all)
}

// issue starts a session for p and sets its cookie.
func (s *sessions) issue(w http.ResponseWriter, p *Person) { s.issueFor(w, p, 0) }

// issueFor starts a session for p, for item only when item is not 0 (an
// email's link), and returns it.
func (s *sessions) issueFor(w http.ResponseWriter, p *Person, item int64) *session {
	raw := make([]byte, 18)
	if _, err := rand.Read(raw); err != nil {
		panic("web: no randomness for a session ID: " + err.Error())
	}
	id := base64.RawURLEncoding.EncodeToString(raw)
	now := s.now()
	s.mu.Lock()
	var (
		mine   int
		oldest string
	)
	for k, ls := range s.live {
		switch {
		case !ls.until.After(now):
			delete(s.live, k)
		case ls.person == p.Name:
			mine++
			if oldest == "" || ls.until.Before(s.live[oldest].until) {
				oldest = k
			}
		}
	}
	if mine >= maxSessionsPerPerson {
		delete(s.live, oldest)
	}
	s.live[id] = liveSession{person: p.Name, until: now.Add(s.ttl), item: item}
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{
		Name: s.cookie, Value: id + "." + s.mac("session", id), Path: s.path, HttpOnly: true, Secure: s.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(s.ttl.Seconds()),
	})
	return &session{person: p, id: id, item: item}
}

// end ends sess (logout): its cookie no longer logs anyone in, also where
// a copy of it is kept.
func (s *sessions) end(w http.ResponseWriter, sess *session) {
	s.mu.Lock()
	delete(s.live, sess.id)
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: "", Path: s.path, HttpOnly: true, Secure: s.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
}

// check returns the request's session, or nil.
func (s *sessions) check(r *http.Request) *session {
	c, err := r.Cookie(s.cookie)
	if err != nil {
		return nil
	}
	id, mac, ok := strings.Cut(c.Value, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(s.mac("session", id))) {
		return nil
	}
	s.mu.Lock()
	ls, ok := s.live[id]
	s.mu.Unlock()
	if !ok || !ls.until.After(s.now()) {
		return nil
	}
	p := s.person(ls.person)
	if p == nil {
		return nil
	}
	return &session{person: p, id: id, item: ls.item}
}

// csrf is the session's token for its forms.
func (s *sessions) csrf(sess *session) string { return s.mac("csrf", sess.id) }

func (s *sessions) csrfOK(sess *session, token string) bool {
	return token != "" && hmac.Equal([]byte(token), []byte(s.csrf(sess)))
}

// noticeQuery is the query that carries text to the next page of sess:
// signed for the session, so that a link cannot put words of its own on the
// site's pages.
func (s *sessions) noticeQuery(sess *session, text string) string {
	return "notice=" + url.QueryEscape(text) + "&sig=" + s.mac("notice", sess.id, text)
}

// notice is the text the request's noticeQuery carries for sess ("" for
// none, or one not signed for this session).
func (s *sessions) notice(r *http.Request, sess *session) string {
	q := r.URL.Query()
	text := q.Get("notice")
	if text == "" || !hmac.Equal([]byte(q.Get("sig")), []byte(s.mac("notice", sess.id, text))) {
		return ""
	}
	return text
}
