package redisstore

// keys builds key and channel names under one prefix (layout in doc.go).
type keys struct{ prefix string }

func (k keys) log(job string) string     { return k.prefix + "log:" + job }
func (k keys) logDone(job string) string { return k.prefix + "log:" + job + ":done" }
func (k keys) logChan(job string) string { return k.prefix + "logch:" + job }
func (k keys) worker(id string) string   { return k.prefix + "worker:" + id }
func (k keys) owner(id string) string    { return k.prefix + "worker:" + id + ":owner" }
func (k keys) workers() string           { return k.prefix + "workers" }
func (k keys) workerID(id string) string { return k.prefix + "workerid:" + id }
func (k keys) hub(id string) string      { return k.prefix + "hub:" + id }
func (k keys) hubs() string              { return k.prefix + "hubs" }
func (k keys) hubsInfo() string          { return k.prefix + "hubs:info" }
func (k keys) session(id string) string  { return k.prefix + "session:" + id }
func (k keys) sessions() string          { return k.prefix + "sessions" }
func (k keys) approval(id string) string { return k.prefix + "approved:" + id }
