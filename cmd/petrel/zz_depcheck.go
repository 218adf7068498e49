package main

import (
	_ "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/common/expfmt"
	_ "github.com/schollz/progressbar/v3"
	_ "google.golang.org/grpc"
	_ "google.golang.org/grpc/credentials"
)

