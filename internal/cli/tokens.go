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

// EnvTokens names the environment variable that may hold serve's tokens as
// a JSON object {"principal": "token", ...}: unlike --token, it is not in
// the process list for every local user to read.
const EnvTokens = "ASKPOINT_TOKENS"

// loadTokens builds the token -> principal map from --token flags, a
// --tokens file and $ASKPOINT_TOKENS, each a JSON object {"principal":
// "token", ...}. warn is told of a tokens file that others may read. No
// error shows a token.
func loadTokens(flags tokenFlags, file string, warn func(string)) (map[string]string, error) {
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
			// The value may be the token itself: it is not shown.
			return nil, fmt.Errorf("a --token value has no '=': want PRINCIPAL=TOKEN (the value is not shown, in case it is a secret)")
		}
		if err := add(principal, token, "--token "+principal); err != nil {
			return nil, err
		}
	}
	if env := os.Getenv(EnvTokens); env != "" {
		var m map[string]string
		if err := json.Unmarshal([]byte(env), &m); err != nil {
			return nil, fmt.Errorf("$%s: want a JSON object mapping principals to tokens (its text is not shown)", EnvTokens)
		}
		for principal, token := range m {
			if err := add(principal, token, "$"+EnvTokens); err != nil {
				return nil, err
			}
		}
	}
	if file != "" {
		if fi, err := os.Stat(file); err == nil && fi.Mode().Perm()&0o077 != 0 && warn != nil {
			warn(fmt.Sprintf("--tokens %s is readable by group or others (mode %v); make it readable by its owner only: chmod 600 %s",
				file, fi.Mode().Perm(), shellQuote(file)))
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--tokens: %w", err)
		}
		var m map[string]string
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("--tokens %s: want a JSON object mapping principals to tokens (its text is not shown)", file)
		}
		for principal, token := range m {
			if err := add(principal, token, "--tokens "+file); err != nil {
				return nil, err
			}
		}
	}
	return tokens, nil
}

// secret is a flag's secret value, or else the first line of file, or else
// the environment variable env: the flag is in the process list for every
// local user to see, a file (mode 0600) or the environment is not.
func secret(flagValue, file, flagName, env string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if file != "" {
		raw, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--%s-file: %w", flagName, err)
		}
		v := strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0])
		if v == "" {
			return "", fmt.Errorf("--%s-file %s is empty", flagName, file)
		}
		return v, nil
	}
	return os.Getenv(env), nil
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
