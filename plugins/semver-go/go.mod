module semver

go 1.27

require toolhost/guest v0.0.0

replace toolhost/guest => ../../guest-sdk/go
