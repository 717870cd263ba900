package web

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

// The list's views.
const (
	viewWaiting  = ""         // what waits on the person (the default)
	viewAnswered = "answered" // what was answered, declined or closed
)

// listQuery is what the list is narrowed to and sorted by: the query of a
// GET form, so a filtered list is a link like any other.
type listQuery struct {
	Agent string // only this agent's questions ("" all)
	Text  string // only questions whose text, request, subject or about holds it
	Sort  string // "left": the least time left first; else the order the inbox keeps
	View  string // viewWaiting or viewAnswered
}

func readListQuery(r *http.Request) listQuery {
	q := r.URL.Query()
	lq := listQuery{Agent: strings.TrimSpace(q.Get("agent")), Text: strings.TrimSpace(q.Get("q")), Sort: q.Get("sort"), View: q.Get("view")}
	if lq.Sort != "left" {
		lq.Sort = ""
	}
	if lq.View != viewAnswered {
		lq.View = viewWaiting
	}
	return lq
}

// Encode is the query as a URL query ("" for the plain list).
func (lq listQuery) Encode() string {
	v := url.Values{}
	for k, x := range map[string]string{"agent": lq.Agent, "q": lq.Text, "sort": lq.Sort, "view": lq.View} {
		if x != "" {
			v.Set(k, x)
		}
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// apply narrows and sorts rows.
func (lq listQuery) apply(rows []row) []row {
	needle := strings.ToLower(lq.Text)
	out := rows[:0]
	for _, r := range rows {
		if lq.Agent != "" && r.Agent != lq.Agent {
			continue
		}
		if needle != "" {
			hay := strings.ToLower(strings.Join(append([]string{r.Text, r.Request, r.Subject, r.Agent, r.Item.TaskID}, r.About...), "\n"))
			if !strings.Contains(hay, needle) {
				continue
			}
		}
		out = append(out, r)
	}
	if lq.Sort == "left" {
		sort.SliceStable(out, func(i, j int) bool {
			a, b := out[i].Expires, out[j].Expires
			switch {
			case a.IsZero() || b.IsZero():
				return !a.IsZero() && b.IsZero() // no expiry last
			default:
				return a.Before(b)
			}
		})
	}
	return out
}

// listView is the list page: its rows, the query they answer and what
// the filter offers.
type listView struct {
	Rows      []row
	Query     listQuery
	Agents    []string // the agents of the person's questions, for the filter
	Heading   string
	Intro     string
	StatsLink string // the stats page, when the person may see it
}

// listedView is the list page's rows and filter from all, the rows of
// lq's view before its filter: one read gives both the rows lq keeps and
// every agent the filter offers.
func listedView(all []row, lq listQuery) listView {
	agents := agentsOf(all) // before apply, which filters all in place
	return listView{Rows: lq.apply(all), Query: lq, Agents: agents}
}

// agentsOf lists the rows' agents, once each, sorted.
func agentsOf(rows []row) []string {
	var out []string
	for _, r := range rows {
		if !slices.Contains(out, r.Agent) {
			out = append(out, r.Agent)
		}
	}
	slices.Sort(out)
	return out
}

// requestText is what the task was asked to do: its request's text, else
// its data in brief.
func requestText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	if t := strings.TrimSpace(text.Parts(m.Parts, "\n")); t != "" {
		return t
	}
	return dataOf(m.Parts)
}

// brief is s cut to about n characters, on one line.
func brief(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return strings.TrimSpace(string(r[:n])) + "…"
	}
	return s
}

// subjectOf says the question's subject for people: "Amount 1200",
// "Payee ACME", by key.
func subjectOf(q *question.Question) []string {
	if q == nil {
		return nil
	}
	keys := make([]string, 0, len(q.Subject))
	for k := range q.Subject {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		v := question.DisplayValue(q.Subject[k])
		if v == "" || v == "null" {
			continue
		}
		out = append(out, question.Humanize(k)+" "+v)
	}
	return out
}

// pair is one key and value of a data part, shown as a line of a list.
type pair struct{ Key, Value string }

// dataView is a data part for people: a flat object as a list of its keys
// and values, anything else as indented JSON.
type dataView struct {
	Pairs []pair
	JSON  string
}

func dataViews(parts a2a.ContentParts) []dataView {
	var out []dataView
	for _, p := range parts {
		if p == nil {
			continue
		}
		d, ok := p.Content.(a2a.Data)
		if !ok {
			continue
		}
		out = append(out, viewOf(d.Value))
	}
	return out
}

func viewOf(v any) dataView {
	if obj, ok := v.(map[string]any); ok {
		var dv dataView
		flat := true
		for _, x := range obj {
			switch x.(type) {
			case map[string]any, []any:
				flat = false
			}
		}
		if flat {
			keys := make([]string, 0, len(obj))
			for k := range obj {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				dv.Pairs = append(dv.Pairs, pair{Key: question.Humanize(k), Value: cmp.Or(question.DisplayValue(obj[k]), "—")})
			}
			return dv
		}
	}
	raw, _ := json.MarshalIndent(v, "", "  ")
	return dataView{JSON: string(raw)}
}

// titleOf is a page's title from a question's text: its first line, cut.
func titleOf(s string) string { return brief(text.FirstLine(s), 80) }
