package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
)

// tokenFlags collects repeated --token PRINCIPAL=TOKEN flags.
type tokenFlags []string

func (f *tokenFlags) String() string     { return fmt.Sprintf("%d tokens", len(*f)) }
func (f *tokenFlags) Set(v string) error { *f = append(*f, v); return nil }

// loadTokens builds the token -> principal map from --token flags and a
// --tokens file: a JSON object {"principal": "token", ...}.
func loadTokens(flags tokenFlags, file string) (map[string]string, error) {
	tokens := map[string]string{}
	add := func(principal, token, from string) error {
		principal, token = strings.TrimSpace(principal), strings.TrimSpace(token)
		if principal == "" || token == "" {
			return fmt.Errorf("%s: want PRINCIPAL=TOKEN with both set", from)
		}
		if reservedPrincipal(principal) {
			return fmt.Errorf("%s: principal names starting with %q are reserved for the server's own calls (%s); choose another name", from, reservedPrefix, internalPrincipal)
		}
		if prev, dup := tokens[token]; dup {
			return fmt.Errorf("%s: principals %q and %q share a token", from, prev, principal)
		}
		tokens[token] = principal
		return nil
	}
	for _, f := range flags {
		principal, token, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("--token %q: want PRINCIPAL=TOKEN", f)
		}
		if err := add(principal, token, "--token "+principal); err != nil {
			return nil, err
		}
	}
	if file != "" {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--tokens: %w", err)
		}
		var m map[string]string
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("--tokens %s: want a JSON object mapping principals to tokens: %w", file, err)
		}
		for principal, token := range m {
			if err := add(principal, token, "--tokens "+file); err != nil {
				return nil, err
			}
		}
	}
	return tokens, nil
}

// loopbackOnly refuses to serve anonymous callers beyond this machine.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--addr %s is not a loopback address, and no tokens are configured: anonymous callers are served on loopback only; add --token PRINCIPAL=TOKEN (or --tokens FILE), or listen on 127.0.0.1", addr)
}

// reservedPrefix starts the principal names no token may stand for: the
// server's own calls to its agents run as internalPrincipal.
const reservedPrefix = "askpoint-"

func reservedPrincipal(p string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), reservedPrefix)
}
