//go:build !verifyfault

package broker

// The test-only fault hooks of `petrel verify` (faults_verifyfault.go) are
// not built in: these no-ops stand in for them, and the normal binary has
// no trace of internal/faults.

// faultHooks is empty without the verifyfault build tag.
type faultHooks struct{}

func (b *Broker) initFaults() error { return nil }

// loseSend never loses a send without the tag.
func (b *Broker) loseSend(*pendingSend, func(int, SendResult, error)) bool { return false }

// reorderPull leaves every pull answer as it is without the tag.
func (b *Broker) reorderPull(*PullRequest, *PullResult) {}
