// Package lint holds tests that keep the code base's architecture rules:
// imports point one way (fronts → broker → store → vfs/clock, and message
// imports none of our packages), and code that decides with time takes it
// from internal/clock.
package lint
