package main
import (
 _ "github.com/asynkron/protoactor-go/actor"
 _ "github.com/asynkron/protoactor-go/cluster"
 _ "github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
 _ "github.com/asynkron/protoactor-go/cluster/clusterproviders/test"
 _ "github.com/asynkron/protoactor-go/remote"
 _ "github.com/redis/go-redis/v9"
 _ "github.com/gorilla/websocket"
 _ "github.com/go-sql-driver/mysql"
 _ "github.com/minio/minio-go/v7"
 _ "go.etcd.io/bbolt"
 _ "gopkg.in/yaml.v3"
)
func main(){}
