// Package metrics owns Petrel's Prometheus registry, its collectors and the
// operator HTTP endpoints:
//
//	/metrics  Prometheus text exposition (format 0.0.4), values in plain decimals
//	/healthz  200 "ok" while the process serves HTTP
//	/readyz   200 "ready" once Options.Ready returns nil, else 503 and why
//
// With --auth the daemon wraps the handler in BasicAuth: /metrics (and any
// other path) needs HTTP Basic credentials, the probes stay open. ListenWith
// serves it over TLS (the process's --tls-mode).
//
// # Two kinds of series
//
// Hot-path series are histograms fed by hooks the daemon installs in the
// broker and the store (broker.Config.ObserveSend, store.Config.OnGroupCommit
// via ObserveSend and ObserveGroupCommit). A prometheus Histogram's Observe
// is lock-free and does not allocate, and the store calls its hook once per
// group commit, not per message.
//
// The per-topic traffic counters exist from the start at zero for every
// topic (up to 1,000 topics without traffic), so the first put is seen by
// rate().
//
// Everything else is read when Prometheus scrapes, by a collector over the
// broker's accessors (Attach gives it the broker; the store's figures come
// through it): per-topic traffic,
// parked pulls, consumer lag, disk space, connections, dedup hits, pending
// timers and dead-letter counts. The send path pays nothing for them. The
// consumer-lag walk is bounded by Options.MaxLagQueues series per scrape;
// queues beyond it are counted in petrel_consumer_lag_omitted_queues.
//
// # Series
//
//	petrel_put_messages_total{topic}            counter  messages stored (batch items, retry and timer copies count one each)
//	petrel_put_bytes_total{topic}               counter  stored record bytes
//	petrel_get_messages_total{topic}            counter  records answered to pulls and pops
//	petrel_get_bytes_total{topic}               counter  their record bytes
//	petrel_send_duration_seconds                histogram  send call to answer, stored or refused
//	petrel_commitlog_flush_duration_seconds     histogram  one commit-log fsync
//	petrel_commitlog_group_commit_messages      histogram  messages acknowledged by one group commit
//	petrel_parked_pulls                         gauge    long-polling pulls waiting for messages
//	petrel_consumer_lag_messages{group,topic,queue_id}  gauge  max offset − committed offset
//	petrel_consumer_lag_omitted_queues          gauge    lag series left out by the bound
//	petrel_pop_inflight_messages{group,topic}   gauge    received by a simple-consumer group, not acked or expired
//	petrel_disk_total_bytes, petrel_disk_free_bytes    gauges  device of the data directory
//	petrel_disk_used_bytes, petrel_disk_used_ratio     gauges  its use; ratio = used / (used + available), as df
//	petrel_retention_removed_unconsumed_messages_total{topic,group}  counter  removed early (disk high-water mark) before the group consumed them
//	petrel_commitlog_bytes                      gauge    commit log kept, oldest segment to durable end
//	petrel_connections                          gauge    open client connections
//	petrel_dedup_hits_total                     counter  resends answered from the dedup window
//	petrel_dedup_window_entries                 gauge    ids the dedup window holds
//	petrel_timer_pending_messages               gauge    delayed messages not yet due
//	petrel_dlq_messages{group}                  gauge    messages in %DLQ%<group>
//	petrel_broker_start_time_seconds            gauge    Unix time the broker started
//	petrel_broker_lease_refusals_total          counter  sends refused or not acked for an expired master lease (controller mode)
//	petrel_auth_refusals_total{protocol,reason} counter  requests refused by --auth (remoting, grpc, http; unsigned, unknown-user, disabled, bad-signature, forbidden)
//
// plus the Go runtime (go_*) and process (process_*) collectors.
//
// The package imports broker, not the store's packages; neither imports it
// (the hooks are plain funcs in their configs), which internal/lint checks.
package metrics
