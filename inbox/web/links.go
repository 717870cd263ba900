package web

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/question"
)

// A notice email carries a link that opens its one question logged in
// (decision 0131): once, until linkTTL or the question's expiry, for the
// person it was sent to; for a yes/no or a single choice, a link per
// option. Opening a link only shows a page with one button (what a mail
// scanner fetches answers nothing); the button's POST, which the origin
// rule guards like every other, uses the link up.
const (
	linkTTL  = 24 * time.Hour
	maxLinks = 4096 // links kept before the oldest are forgotten
)

// grant is what a link lets its holder do: open one question as one person.
type grant struct {
	person string
	item   int64
	until  time.Time
}

// grantLink makes a one-time link's token for person and item.
func (s *sessions) grantLink(person string, item int64, until time.Time) string {
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		panic("web: no randomness for a link: " + err.Error())
	}
	tok := base64.RawURLEncoding.EncodeToString(raw)
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.links == nil {
		s.links = map[string]grant{}
	}
	if len(s.links) >= maxLinks {
		oldest := ""
		for k, g := range s.links {
			if !g.until.After(now) {
				delete(s.links, k)
			} else if oldest == "" || g.until.Before(s.links[oldest].until) {
				oldest = k
			}
		}
		if len(s.links) >= maxLinks {
			delete(s.links, oldest)
		}
	}
	s.links[linkKey(tok)] = grant{person: person, item: item, until: until}
	return tok
}

// linkKey is how a link's token is kept: its digest, so the map holds no
// usable token.
func linkKey(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// peekLink says whether tok is a live link, without using it up.
func (s *sessions) peekLink(tok string) (grant, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.links[linkKey(tok)]
	return g, ok && g.until.After(s.now())
}

// useLink uses tok up and returns what it grants.
func (s *sessions) useLink(tok string) (grant, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.links[linkKey(tok)]
	delete(s.links, linkKey(tok))
	return g, ok && g.until.After(s.now())
}

// linkUntil is how long a link for it lasts: linkTTL, and no longer than
// the question takes answers.
func linkUntil(it *inbox.Item, now time.Time) time.Time {
	until := now.Add(linkTTL)
	if e := it.Expires(); !e.IsZero() && e.Before(until) {
		until = e
	}
	return until
}

// pickable is the field a yes/no or single choice question is answered
// with by one option, and its options; "" when the question needs more.
func pickable(q *question.Question) (string, []question.FieldOption) {
	fs := q.Fields()
	if q == nil || len(fs) == 0 {
		return "", nil
	}
	var need []question.Field
	for _, f := range fs {
		if f.Required {
			need = append(need, f)
		}
	}
	if len(need) != 1 {
		return "", nil
	}
	f := need[0]
	switch {
	case f.Kind == question.KindChoice && len(f.Options) <= 6:
		return f.Name, f.Options
	case f.Kind == question.KindBoolean:
		return f.Name, []question.FieldOption{{Value: true, Label: "Yes"}, {Value: false, Label: "No"}}
	}
	return "", nil
}

// emailLinks is the part of a notice that opens the question for p: the
// form's link, and a link per option when one option answers it.
func (s *Server) emailLinks(it *inbox.Item, p *Person) string {
	tok := s.sess.grantLink(p.Name, it.ID, linkUntil(it, s.now()))
	link := s.cfg.PublicURL + "/l/" + tok
	var b strings.Builder
	fmt.Fprintf(&b, "Open it without logging in (this link works once, until %s): %s\n", linkUntil(it, s.now()).UTC().Format(time.RFC1123), link)
	if name, opts := pickable(it.Question); name != "" {
		b.WriteString("Or answer it in one click (you confirm on the page):\n")
		for _, o := range opts {
			fmt.Fprintf(&b, "  %s: %s?pick=%s\n", o.Text(), link, url.QueryEscape(question.DisplayValue(o.Value)))
		}
	}
	return b.String()
}

// linkView is the page a link opens: one button.
type linkView struct {
	Action string // where the button posts
	Text   string // the question
	Pick   string // the option the link answers with ("" opens the form)
	PickAs string // the option's label
	Person string
	Gone   bool // used or expired
}

// linkPage is GET /l/{token}: what the link would do, and a button that
// does it. It uses nothing up.
func (s *Server) linkPage(w http.ResponseWriter, r *http.Request) {
	tok := r.PathValue("token")
	g, ok := s.sess.peekLink(tok)
	v := linkView{Action: "/l/" + tok, Pick: r.URL.Query().Get("pick"), Gone: !ok}
	status := http.StatusOK
	if ok {
		it, err := s.ib.Get(r.Context(), g.item)
		if err != nil {
			v.Gone = true
		} else {
			v.Text, v.Person = it.Text, g.person
			if v.Pick != "" {
				v.PickAs = pickLabel(it.Question, v.Pick)
				if v.PickAs == "" {
					http.Error(w, fmt.Sprintf("%q is not an option of this question", v.Pick), http.StatusBadRequest)
					return
				}
				v.Action += "?pick=" + url.QueryEscape(v.Pick)
			}
		}
	}
	if v.Gone {
		status = http.StatusGone
	}
	s.render(w, status, "link.html", page{Title: "Open a question", Body: v})
}

// pickLabel is the label of q's option whose value is pick, "" when none
// is.
func pickLabel(q *question.Question, pick string) string {
	_, opts := pickable(q)
	for _, o := range opts {
		if question.DisplayValue(o.Value) == pick {
			return o.Text()
		}
	}
	return ""
}

// linkPost is POST /l/{token}: it uses the link up, logs its person in
// for its one question, and opens the form, or, with ?pick=, answers it
// with that option. Failed uses count against the address like failed
// logins.
func (s *Server) linkPost(w http.ResponseWriter, r *http.Request) {
	done, wait := s.sess.attempt(clientAddr(r))
	if done == nil {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		http.Error(w, "too many failed links or logins from your address: try again later", http.StatusTooManyRequests)
		return
	}
	g, ok := s.sess.useLink(r.PathValue("token"))
	var p *Person
	if ok {
		p = s.sess.person(g.person)
	}
	done(p != nil)
	if p == nil {
		s.render(w, http.StatusGone, "link.html", page{Title: "Open a question", Body: linkView{Gone: true}})
		return
	}
	sess := s.sess.issueFor(w, p, g.item)
	s.log.Info("web inbox: logged in by an email link", slog.String("person", p.Name), slog.Int64("item", g.item))
	id := strconv.FormatInt(g.item, 10)
	pick := r.URL.Query().Get("pick")
	if pick == "" {
		http.Redirect(w, r, "/q/"+id, http.StatusSeeOther)
		return
	}
	it, err := s.ib.Get(r.Context(), g.item)
	if err != nil || pickLabel(it.Question, pick) == "" {
		http.Redirect(w, r, "/q/"+id, http.StatusSeeOther)
		return
	}
	name, _ := pickable(it.Question)
	r.PostForm = url.Values{"csrf": {s.sess.csrf(sess)}, "action": {"answer"}, fieldPrefix + name: {pick}}
	r.SetPathValue("id", id)
	s.answerPost(w, r, sess)
}

// scopeAllows says whether a session that a link opened for one item may
// have the request: that item's form, its state, check and answer, the
// live updates, its task's page, and logging out.
func (s *Server) scopeAllows(r *http.Request, sess *session) bool {
	id := strconv.FormatInt(sess.item, 10)
	switch p := r.URL.Path; p {
	case "/q/" + id, "/q/" + id + "/state", "/q/" + id + "/check", "/events", "/logout":
		return true
	default:
		task, ok := strings.CutPrefix(p, "/tasks/")
		if !ok || s.ib == nil {
			return false
		}
		it, err := s.ib.Get(r.Context(), sess.item)
		return err == nil && it.TaskID == task
	}
}
