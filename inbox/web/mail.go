package web

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/smtp"
	"strings"
	"time"
)

// Mailer sends notices by SMTP.
type Mailer struct {
	Addr     string // host:port of the SMTP server
	From     string // the sender address
	Username string // for SMTP AUTH PLAIN ("" for none; net/smtp sends it only over TLS or to localhost)
	Password string
}

// Mail is one message.
type Mail struct {
	To      string
	Subject string
	Body    string
}

// Send delivers m (STARTTLS when the server offers it).
func (ml *Mailer) Send(m Mail) error {
	var auth smtp.Auth
	if ml.Username != "" {
		host, _, err := net.SplitHostPort(ml.Addr)
		if err != nil {
			return fmt.Errorf("smtp address %q: %w", ml.Addr, err)
		}
		auth = smtp.PlainAuth("", ml.Username, ml.Password, host)
	}
	if err := smtp.SendMail(ml.Addr, auth, ml.From, []string{m.To}, ml.encode(m)); err != nil {
		return fmt.Errorf("send mail to %s through %s: %w", m.To, ml.Addr, err)
	}
	return nil
}

// encode builds the message: headers free of line breaks (the subject holds
// an agent's words), a quoted-printable UTF-8 body.
func (ml *Mailer) encode(m Mail) []byte {
	var b bytes.Buffer
	oneLine := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	domain := "askpoint.invalid"
	if i := strings.LastIndexByte(ml.From, '@'); i >= 0 {
		domain = ml.From[i+1:]
	}
	fmt.Fprintf(&b, "From: %s\r\n", oneLine(ml.From))
	fmt.Fprintf(&b, "To: %s\r\n", oneLine(m.To))
	fmt.Fprintf(&b, "Subject: %s\r\n", mime.QEncoding.Encode("utf-8", oneLine(m.Subject)))
	fmt.Fprintf(&b, "Date: %s\r\n", time.Now().UTC().Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <%s@%s>\r\n", hex.EncodeToString(id), domain)
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n")
	qp := quotedprintable.NewWriter(&b)
	_, _ = qp.Write([]byte(strings.ReplaceAll(m.Body, "\n", "\r\n")))
	_ = qp.Close()
	return b.Bytes()
}
