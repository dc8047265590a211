// The in-kernel half of `perftest profile --mode=bpf` (bcc-profile-rfc.txt's
// design, tools/profile.py's do_perf_event()): a BPF_PROG_TYPE_PERF_EVENT
// program, attached to each cpu-clock event with PERF_EVENT_IOC_SET_BPF, runs
// on every sample and counts {pid, comm, user stack id, kernel stack id} in a
// hash map; the stacks themselves go to a BPF_MAP_TYPE_STACK_TRACE map
// (bpf_get_stackid()). User space reads both maps at the end.
//
// Built with clang -target bpf; bpftool gen skeleton makes profile.skel.h.
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <linux/types.h>

#include <bpf/bpf_helpers.h>

#define TASK_COMM_LEN 16
#define PERF_MAX_STACK_DEPTH 127

struct key_t {
  __u32 pid;               // tgid
  __u32 tid;
  __s64 user_stack_id;     // < 0: bpf_get_stackid()'s -errno
  __s64 kernel_stack_id;   // < 0: bpf_get_stackid()'s -errno
  char comm[TASK_COMM_LEN];
};

// Set by user space before load: -U / -K (0: collect, 1: leave out).
const volatile __u32 skip_user_stacks = 0;
const volatile __u32 skip_kernel_stacks = 0;

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 40960);
  __type(key, struct key_t);
  __type(value, __u64);
} counts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_STACK_TRACE);
  __uint(max_entries, 16384);  // --stack-storage-size (resized before load)
  __uint(key_size, sizeof(__u32));
  __uint(value_size, PERF_MAX_STACK_DEPTH * sizeof(__u64));
} stack_traces SEC(".maps");

SEC("perf_event")
int do_perf_event(struct bpf_perf_event_data *ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  struct key_t key = {};
  key.pid = id >> 32;
  key.tid = (__u32)id;
  bpf_get_current_comm(&key.comm, sizeof(key.comm));
  key.user_stack_id = skip_user_stacks ? -1 : bpf_get_stackid(ctx, &stack_traces, BPF_F_USER_STACK);
  key.kernel_stack_id = skip_kernel_stacks ? -1 : bpf_get_stackid(ctx, &stack_traces, 0);
  __u64 one = 1;
  __u64 *n = bpf_map_lookup_elem(&counts, &key);
  if (n)
    __sync_fetch_and_add(n, 1);
  else
    bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
