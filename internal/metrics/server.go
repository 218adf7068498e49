package metrics

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server is the operator HTTP listener (/metrics, /healthz, /readyz).
type Server struct {
	srv      *http.Server
	ln       net.Listener
	done     chan error
	once     sync.Once
	closeErr error
}

// Listen listens on addr (":8080", "127.0.0.1:0") and serves h until
// Close.
func Listen(addr string, h http.Handler) (*Server, error) { return ListenWith(addr, h, nil) }

// ListenWith is Listen with the TCP listener wrapped by wrap (TLS:
// tlsx.Server.Listener in the process's mode); nil wraps nothing.
func ListenWith(addr string, h http.Handler, wrap func(net.Listener) net.Listener) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	if wrap != nil {
		ln = wrap(ln)
	}
	s := &Server{
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout: 30 * time.Second, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute},
		ln:   ln,
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops listening and closes every connection at once (a scrape in
// progress is cut). It waits until the server goroutine has returned. It
// is idempotent.
func (s *Server) Close() error {
	s.once.Do(func() {
		err := s.srv.Close()
		if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		s.closeErr = err
	})
	return s.closeErr
}
