package fsm

// NewState returns the empty state.
func NewState() *State {
	return &State{Groups: map[string]*Group{}, NextIncarnation: 1}
}

// Apply applies c deterministically; a refused command changes nothing and
// returns one of the fsm errors.
func (s *State) Apply(c Command) (Result, error) { return Result{}, ErrInvalid }

// Check verifies the invariants of s.
func (s *State) Check() error { return nil }

// CheckStep verifies the invariants of one step.
func CheckStep(prev, next *State, c Command) error { return nil }

// Clone returns a deep copy of s.
func (s *State) Clone() *State { return NewState() }

// Replica returns the registered replica id.
func (g *Group) Replica(id int64) (Replica, bool) { return Replica{}, false }

// InISR reports whether id is in the in-sync set.
func (g *Group) InISR(id int64) bool { return false }
