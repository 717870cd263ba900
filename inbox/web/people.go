package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
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

// sessions issues and checks session cookies and CSRF tokens: both are
// HMACs under a key made when the inbox starts (a restart logs everyone
// out), so nothing is kept per session.
type sessions struct {
	key    []byte
	people []Person
	secure bool
	ttl    time.Duration
	now    func() time.Time
}

const cookieName = "askpoint_inbox"

func newSessions(people []Person, secure bool, now func() time.Time) *sessions {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic("web: no randomness for the session key: " + err.Error())
	}
	return &sessions{key: key, people: people, secure: secure, ttl: 12 * time.Hour, now: now}
}

func (s *sessions) mac(parts ...string) string {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte(strings.Join(parts, "\x00")))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
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
	id     string // identifies the session: name and issue time
}

// issue sets the session cookie for p.
func (s *sessions) issue(w http.ResponseWriter, p *Person) {
	name := base64.RawURLEncoding.EncodeToString([]byte(p.Name))
	exp := strconv.FormatInt(s.now().Add(s.ttl).Unix(), 10)
	nonce := make([]byte, 12)
	_, _ = rand.Read(nonce)
	n := base64.RawURLEncoding.EncodeToString(nonce)
	val := name + "." + exp + "." + n + "." + s.mac("session", name, exp, n)
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: val, Path: "/", HttpOnly: true, Secure: s.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(s.ttl.Seconds()),
	})
}

func (s *sessions) clear(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, Secure: s.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
}

// check returns the request's session, or nil.
func (s *sessions) check(r *http.Request) *session {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 4 {
		return nil
	}
	name, exp, n, mac := parts[0], parts[1], parts[2], parts[3]
	if !hmac.Equal([]byte(mac), []byte(s.mac("session", name, exp, n))) {
		return nil
	}
	until, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || s.now().Unix() > until {
		return nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(name)
	if err != nil {
		return nil
	}
	p := s.person(string(raw))
	if p == nil {
		return nil
	}
	return &session{person: p, id: name + "." + exp + "." + n}
}

// csrf is the session's token for its forms.
func (s *sessions) csrf(sess *session) string { return s.mac("csrf", sess.id) }

func (s *sessions) csrfOK(sess *session, token string) bool {
	return token != "" && hmac.Equal([]byte(token), []byte(s.csrf(sess)))
}
