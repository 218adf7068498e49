package metrics

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/petrelmq/petrel/internal/broker"
)

// Descriptions of the scrape-time series (see the package doc).
var (
	descPutMsgs = prometheus.NewDesc("petrel_put_messages_total",
		"Messages stored, per topic (each batch item and each retry or timer copy counts once).", []string{"topic"}, nil)
	descPutBytes = prometheus.NewDesc("petrel_put_bytes_total",
		"Bytes of stored records (body, properties, topic and fixed fields), per topic.", []string{"topic"}, nil)
	descGetMsgs = prometheus.NewDesc("petrel_get_messages_total",
		"Records answered to pulls and pops, per topic.", []string{"topic"}, nil)
	descGetBytes = prometheus.NewDesc("petrel_get_bytes_total",
		"Bytes of records answered to pulls and pops, per topic.", []string{"topic"}, nil)
	descParked = prometheus.NewDesc("petrel_parked_pulls",
		"Long-polling pull requests waiting for messages.", nil, nil)
	descLag = prometheus.NewDesc("petrel_consumer_lag_messages",
		"Messages of a queue not yet consumed by a group: the queue's max offset minus the group's committed offset.",
		[]string{"group", "topic", "queue_id"}, nil)
	descLagOmitted = prometheus.NewDesc("petrel_consumer_lag_omitted_queues",
		"Queues whose lag this scrape left out because of the bound on lag series.", nil, nil)
	descDiskTotal = prometheus.NewDesc("petrel_disk_total_bytes",
		"Size of the device that holds the data directory.", nil, nil)
	descDiskFree = prometheus.NewDesc("petrel_disk_free_bytes",
		"Free bytes on the device that holds the data directory (available to the broker).", nil, nil)
	descDiskUsed = prometheus.NewDesc("petrel_disk_used_bytes",
		"Bytes in use on the device that holds the data directory (blocks − free blocks, as df counts them).", nil, nil)
	descDiskUsedRatio = prometheus.NewDesc("petrel_disk_used_ratio",
		"Used fraction of the device that holds the data directory, used / (used + available) as df and RocketMQ compute it; "+
			"retention's high-water mark and the hard limit act on it.", nil, nil)
	descRemovedUnconsumed = prometheus.NewDesc("petrel_retention_removed_unconsumed_messages_total",
		"Messages retention removed before their reserve time (disk above the high-water mark) that a group had not consumed, per topic and group.",
		[]string{"topic", "group"}, nil)
	descCommitLog = prometheus.NewDesc("petrel_commitlog_bytes",
		"Bytes of commit log kept: from the oldest kept segment to the durable end.", nil, nil)
	descConns = prometheus.NewDesc("petrel_connections",
		"Open client connections (remoting).", nil, nil)
	descDedupHits = prometheus.NewDesc("petrel_dedup_hits_total",
		"Resends answered with the original's result from the dedup window instead of being stored again.", nil, nil)
	descDedupEntries = prometheus.NewDesc("petrel_dedup_window_entries",
		"Message ids the dedup window holds.", nil, nil)
	descTimers = prometheus.NewDesc("petrel_timer_pending_messages",
		"Delayed messages (delay levels, timers, retries) not yet delivered.", nil, nil)
	descDLQ = prometheus.NewDesc("petrel_dlq_messages",
		"Messages in a group's dead-letter topic %DLQ%<group>.", []string{"group"}, nil)
	descStart = prometheus.NewDesc("petrel_broker_start_time_seconds",
		"Unix time the broker started.", nil, nil)
)

// maxIdleTopicSeries bounds the topics without traffic whose counters a
// scrape reports at zero.
const maxIdleTopicSeries = 1000

// brokerCollector reads the broker's accessors at scrape time; what it
// reports of the store (disk, retention, commit log) it reads through the
// broker too.
type brokerCollector struct{ m *Metrics }

func (c *brokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPutMsgs, descPutBytes, descGetMsgs, descGetBytes, descParked, descLag,
		descLagOmitted, descDiskTotal, descDiskFree, descCommitLog, descConns, descDedupHits, descDedupEntries,
		descTimers, descDLQ, descStart, descDiskUsed, descDiskUsedRatio, descRemovedUnconsumed} {
		ch <- d
	}
	ch <- descPopInFlight
	for _, d := range replicationDescs {
		ch <- d
	}
}

func (c *brokerCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.m.src.Load()
	if src == nil {
		return
	}
	b := src.Broker
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	traffic := b.TopicTraffic()
	seen := make(map[string]bool, len(traffic))
	for _, t := range traffic {
		seen[t.Topic] = true
		counter(descPutMsgs, float64(t.PutMsgs), t.Topic)
		counter(descPutBytes, float64(t.PutBytes), t.Topic)
		counter(descGetMsgs, float64(t.GetMsgs), t.Topic)
		counter(descGetBytes, float64(t.GetBytes), t.Topic)
	}
	// A topic with no traffic yet has its counters at zero, so that they
	// exist from the start (rate() and alerts see the first put), up to a
	// bound: a broker with 100,000 idle topics does not serve 400,000
	// series of zeros.
	zeros := maxIdleTopicSeries
	for _, t := range b.Topics() {
		if zeros == 0 {
			break
		}
		if seen[t.Name] {
			continue
		}
		zeros--
		for _, d := range []*prometheus.Desc{descPutMsgs, descPutBytes, descGetMsgs, descGetBytes} {
			counter(d, 0, t.Name)
		}
	}
	gauge(descParked, float64(b.ParkedPulls()))
	c.collectLag(b, gauge)
	c.collectPopInFlight(b, gauge)
	if u, err := b.DiskUsage(); err == nil {
		gauge(descDiskTotal, float64(u.TotalBytes))
		gauge(descDiskFree, float64(u.FreeBytes))
		gauge(descDiskUsed, float64(u.UsedBytes))
		gauge(descDiskUsedRatio, u.UsedFraction())
	}
	for _, r := range b.RemovedUnconsumed() {
		counter(descRemovedUnconsumed, float64(r.Messages), r.Topic, r.Group)
	}
	gauge(descCommitLog, float64(b.CommitLogBytes()))
	if src.Conns != nil {
		gauge(descConns, float64(src.Conns()))
	}
	ds := b.DedupStats()
	counter(descDedupHits, float64(ds.Hits))
	gauge(descDedupEntries, float64(ds.Entries))
	gauge(descTimers, float64(b.PendingTimers()))
	for _, t := range b.Topics() {
		group, ok := strings.CutPrefix(t.Name, broker.DLQGroupTopicPrefix)
		if !ok {
			continue
		}
		var n int64
		for q := range max(t.ReadQueueNums, t.WriteQueueNums) {
			n += max(0, b.MaxOffset(t.Name, q)-b.MinOffset(t.Name, q))
		}
		gauge(descDLQ, float64(n), group)
	}
	gauge(descStart, float64(b.Started().UnixNano())/1e9)
	collectReplication(b, gauge, counter)
}

// collectLag reports every group's lag per queue, at most MaxLagQueues
// series; the rest are counted as omitted.
func (c *brokerCollector) collectLag(b *broker.Broker, gauge func(*prometheus.Desc, float64, ...string)) {
	budget := c.m.opts.MaxLagQueues
	omitted := 0
	for _, l := range b.AllConsumerLag() {
		if budget == 0 {
			omitted++
			continue
		}
		budget--
		gauge(descLag, float64(l.Lag), l.Group, l.Topic, strconv.Itoa(int(l.QueueID)))
	}
	gauge(descLagOmitted, float64(omitted))
}
