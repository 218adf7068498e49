package interop

import _ "github.com/apache/rocketmq-clients/golang/v5"
