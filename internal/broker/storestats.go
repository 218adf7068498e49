package broker

// CommitLogBytes is the size of the commit log kept: from the oldest kept
// segment to the durable end (0 when retention removed everything). For
// monitoring (petrel_commitlog_bytes).
func (b *Broker) CommitLogBytes() int64 {
	return max(0, b.st.Durable()-b.st.CommitLogMinOffset())
}
