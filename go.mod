module github.com/aiperf-action/aiperf-action

go 1.26.0

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0 // indirect
	github.com/go-zeromq/goczmq/v4 v4.2.2 // indirect
	github.com/go-zeromq/zmq4 v0.17.0 // indirect
	github.com/google/go-github/v66 v66.0.0 // indirect
	github.com/google/go-querystring v1.1.0 // indirect
	github.com/sethvargo/go-githubactions v1.4.0 // indirect
	github.com/spf13/pflag v1.1.0 // indirect
	golang.org/x/sync v0.12.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/term v0.48.0 // indirect
	golang.org/x/text v0.23.0 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
