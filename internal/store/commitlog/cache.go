package commitlog

// Dropping the log's older pages from the OS page cache (Options.PageCacheBytes).
//
// A commit log is written once and read mostly near its end. Left alone, the
// kernel keeps every page written until memory runs out, and each new page of
// log then costs a fresh page allocation, or a reclaim, in the writer's
// pwrite. On virtual machines whose free memory is returned to the host
// (balloon, free-page reporting), a fresh page is a host page fault: on the
// machines Petrel is measured on, pwrite of new pages ran at a quarter of
// its speed once the page cache had grown by 1.5-3 GB. Freeing the pages of
// what is already on disk a window behind the durable end keeps the log's
// cache the same size, so the kernel hands the writer back the pages it
// just freed.

// dropStep is the most the dropper frees at once; it runs when the window
// has moved by a step.
const dropStep = 32 << 20

// dropChunk returns how far the durable end must move past the last drop
// before the dropper runs again.
func (l *Log) dropChunk() int64 {
	return min(dropStep, max(l.opts.PageCacheBytes/4, 4096))
}

// dropper frees the cached pages of the log more than PageCacheBytes behind
// the durable end, a chunk at a time, off the writer's and flusher's paths.
func (l *Log) dropper(from int64) {
	defer l.wg.Done()
	dropped := from
	warned := false
	for {
		select {
		case <-l.dropKick:
		case <-l.quit:
			return
		}
		to := l.flushed.Load() - l.opts.PageCacheBytes
		to -= to % 4096
		if to-dropped < l.dropChunk() {
			continue
		}
		dropped = max(dropped, l.MinOffset())
		for dropped < to {
			s, err := l.acquire(dropped)
			if err != nil {
				// Retention removed the segment meanwhile.
				dropped = max(to, l.MinOffset())
				break
			}
			end := min(to, s.start+l.opts.SegmentBytes)
			if err := s.f.DropCache(dropped-s.start, end-dropped); err != nil && !warned {
				warned = true
				l.log.Warn("could not drop the page cache of old log bytes; memory use grows", "segment", s.name, "err", err)
			}
			s.release()
			dropped = end
		}
	}
}
