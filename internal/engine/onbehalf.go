package engine

import (
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// OnBehalfOfKey is the request metadata key under which an orchestrator (a
// relay) names the principal it calls a sub-agent for. A sub-task runs as
// the orchestrator's own principal; without this the sub-agent would act
// for the orchestrator instead of the real caller (a confused deputy).
const OnBehalfOfKey = "https://askpoint.dev/ext/relay/v1#onBehalfOf"

// onBehalfOf is the principal the request says it is made for, trusted
// only from the principals in Config.OnBehalfOfPrincipals; "" otherwise.
func (s *Engine) onBehalfOf(owner string, request *a2a.Message) string {
	if owner == "" || request == nil || !slices.Contains(s.cfg.OnBehalfOfPrincipals, owner) {
		return ""
	}
	v, _ := request.Metadata[OnBehalfOfKey].(string)
	return v
}
