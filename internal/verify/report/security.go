package report

import (
	"slices"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// Security is how a run's clients and processes were protected, from the
// history's Security line: Auth (`petrel verify --auth`: every request
// signed and authorized), TLS (`--tls`: every connection in TLS) and what
// the line says about them. A history without that line (a run without
// either) gives the zero Security.
type Security struct {
	Auth   bool
	TLS    bool
	Detail string
}

// SecurityOf reads the Security line of ops (the first, if several).
func SecurityOf(ops []history.Op) Security {
	for _, op := range ops {
		if op.F != history.Security || op.Type != history.Info {
			continue
		}
		on, detail := history.ParseSecurityValue(op.Value)
		return Security{
			Auth:   slices.Contains(on, history.SecurityAuth),
			TLS:    slices.Contains(on, history.SecurityTLS),
			Detail: detail,
		}
	}
	return Security{}
}

// On reports whether anything was on.
func (s Security) On() bool { return s.Auth || s.TLS }

// Line is the one-line description of the text and HTML reports.
func (s Security) Line() string {
	line := "auth " + onOff(s.Auth) + ", tls " + onOff(s.TLS)
	if s.Detail != "" {
		line += " (" + s.Detail + ")"
	}
	return line
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// security is s's Security.
func (s Summary) security() Security {
	return Security{Auth: s.Auth, TLS: s.TLS, Detail: s.SecurityDetail}
}
