package front

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// BenchmarkDecodeSendMessage decodes the params of the expense example's
// request and answer as an SDK client sends them.
func BenchmarkDecodeSendMessage(b *testing.B) {
	ask := []byte(`{"message":{"messageId":"0195f3c2-7a4e-7c1d-9a51-3c2f8e4b6d12","parts":[{"text":"File my taxi receipt from Tuesday, 42 euros"}],"role":"ROLE_USER"}}`)
	answer := []byte(`{"message":{"contextId":"0195f3c2-7a4e-7c1d-9a51-3c2f8e4b6d11","messageId":"0195f3c2-7a4e-7c1d-9a51-3c2f8e4b6d13","parts":[{"data":{"costCentre":"CC-4410"},"mediaType":"application/json"}],"role":"ROLE_USER","taskId":"0195f3c2-7a4e-7c1d-9a51-3c2f8e4b6d10"}}`)
	b.ReportAllocs()
	for b.Loop() {
		var req a2a.SendMessageRequest
		if err := decodeSendMessage(ask, &req, "params"); err != nil {
			b.Fatal(err)
		}
		if err := decodeSendMessage(answer, &req, "params"); err != nil {
			b.Fatal(err)
		}
	}
}
