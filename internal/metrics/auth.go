package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// Labels of petrel_auth_refusals_total that exist at zero from the start
// (auth.CheckerOptions.Refused's protocols and reasons).
var (
	refusalProtocols = []string{"remoting", "grpc", "http", "ha"}
	refusalReasons   = []string{"unsigned", "unknown-user", "disabled", "bad-signature", "forbidden"}
)

func newAuthRefusals() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "petrel_auth_refusals_total",
		Help: "Requests refused by authentication or authorization (--auth), by protocol (remoting, grpc, http, ha: the replication port) and reason " +
			"(unsigned, unknown-user, disabled, bad-signature, forbidden).",
	}, []string{"protocol", "reason"})
	for _, p := range refusalProtocols {
		for _, r := range refusalReasons {
			c.WithLabelValues(p, r)
		}
	}
	return c
}

// AuthRefused counts one refusal; install it as the auth checker's
// Refused hook (auth.CheckerOptions.Refused). Safe for concurrent use.
func (m *Metrics) AuthRefused(protocol, reason string) {
	m.authRefusals.WithLabelValues(protocol, reason).Inc()
}

// probePaths answer without credentials: a load balancer's or
// orchestrator's health checks carry none, and say nothing secret.
var probePaths = map[string]bool{"/healthz": true, "/readyz": true}

// BasicAuth wraps h: every path but the probes (/healthz, /readyz) needs
// HTTP Basic credentials that allow accepts, else it answers 401 with a
// WWW-Authenticate challenge (no body hint of which part was wrong).
func BasicAuth(h http.Handler, allow func(r *http.Request, user, secret string) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if probePaths[r.URL.Path] {
			h.ServeHTTP(w, r)
			return
		}
		user, secret, ok := r.BasicAuth()
		if !ok || !allow(r, user, secret) {
			w.Header().Set("WWW-Authenticate", `Basic realm="petrel", charset="UTF-8"`)
			http.Error(w, "authentication required: give the user and secret of a super user, or of a user allowed Get on the cluster, with HTTP Basic", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
