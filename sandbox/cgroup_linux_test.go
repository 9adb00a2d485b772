package sandbox

import (
	"strings"
	"testing"
)

func TestCgroupFiles(t *testing.T) {
	const hybrid = "9:name=systemd:/\n8:pids:/a\n4:memory:/process_api/f4a1\n1:cpu,cpuacct:/\n0::/user.slice/x.scope\n"
	v1 := func(ctl string) func(string) bool {
		return func(c string) bool {
			for _, x := range strings.Split(c, ",") {
				if x == ctl {
					return true
				}
			}
			return false
		}
	}
	cases := []struct {
		file  string
		match func(string) bool
		want  string
		found bool
	}{
		{hybrid, v1("memory"), "/process_api/f4a1", true},
		{hybrid, v1("pids"), "/a", true},
		{hybrid, v1("cpuacct"), "/", true},
		{hybrid, func(c string) bool { return c == "" }, "/user.slice/x.scope", true},
		{hybrid, v1("hugetlb"), "", false},
		{"garbage\n::\n", v1("memory"), "", false},
		{"", v1("memory"), "", false},
	}
	for _, c := range cases {
		got, ok := cgroupPath([]byte(c.file), c.match)
		if got != c.want || ok != c.found {
			t.Errorf("cgroupPath: got %q %v, want %q %v", got, ok, c.want, c.found)
		}
	}

	const mountinfo = `25 30 0:23 / /sys rw,nosuid - sysfs sysfs rw
35 25 0:30 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755
36 35 0:31 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory
37 35 0:32 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
38 35 0:33 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
broken line without separator
39 35 0:34 / /x rw - cgroup
`
	for _, c := range []struct{ ctl, want string }{
		{"memory", "/sys/fs/cgroup/memory"}, {"cpuacct", "/sys/fs/cgroup/cpu,cpuacct"}, {"pids", ""},
	} {
		got, err := v1MountIn(strings.NewReader(mountinfo), c.ctl)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("v1MountIn %s: got %q %v, want %q", c.ctl, got, err, c.want)
		}
	}
}
