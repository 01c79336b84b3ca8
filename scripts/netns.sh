#!/usr/bin/env bash
# netns.sh — test "hosts" on one machine: Linux network namespaces joined by a bridge.
#
#   scripts/netns.sh up     [-n COUNT] [-p PREFIX] [-s SUBNET] [--delay-ms MS] [--rate RATE]
#   scripts/netns.sh down   [-n COUNT] [-p PREFIX]
#   scripts/netns.sh status [-n COUNT] [-p PREFIX]
#
# `up` creates namespaces PREFIX0 .. PREFIX<COUNT-1> (default tlh0, tlh1, tlh2) and a switch
# namespace PREFIX-sw holding a bridge. Each host namespace gets lo and eth0 (a veth pair
# whose other end is on the bridge) with address SUBNET.<i+1>/24 (default 10.77.0.1, .2, ...).
# Nothing is created in the namespace this script runs in: the addresses exist only inside
# the new namespaces, so they cannot clash with real networks. --delay-ms adds that much
# one-way latency on every eth0 (tc netem; optional, needs the sch_netem module). --rate limits
# what every eth0 sends to RATE (tc's units: 1gbit, 100mbit; a token bucket, sch_tbf; with
# --delay-ms the netem qdisc sits under it).
# `down` deletes the namespaces (their devices go with them). Needs root and iproute2.
#
# Run ranks inside with `tile launch --netns --hosts tlh0:2,tlh1:2,tlh2:2 -- CMD`.
set -eu

cmd=${1:-}
[ $# -gt 0 ] && shift
count=3
prefix=tlh
subnet=10.77.0
delay=0
rate=
while [ $# -gt 0 ]; do
    case $1 in
        -n) count=$2; shift 2 ;;
        -p) prefix=$2; shift 2 ;;
        -s) subnet=$2; shift 2 ;;
        --delay-ms) delay=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "netns.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case $count in ''|*[!0-9]*) echo "netns.sh: -n wants a number" >&2; exit 2 ;; esac
if [ "$count" -lt 1 ] || [ "$count" -gt 250 ]; then echo "netns.sh: -n must be 1..250" >&2; exit 2; fi
case $prefix in ''|*[!A-Za-z0-9_-]*) echo "netns.sh: bad prefix '$prefix'" >&2; exit 2 ;; esac
if [ ${#prefix} -gt 12 ]; then echo "netns.sh: prefix '$prefix' is too long (12 characters at most)" >&2; exit 2; fi
case $subnet in *[!0-9.]*|*.*.*.*) echo "netns.sh: -s wants three octets like 10.77.0" >&2; exit 2 ;; esac
case $rate in ''|[0-9]*bit|[0-9]*[kmgKMG]bit|[0-9]*bps|[0-9]*[kmgKMG]bps) ;; *) echo "netns.sh: --rate wants a tc rate like 1gbit or 100mbit" >&2; exit 2 ;; esac

need() {
    if ! command -v ip >/dev/null 2>&1; then
        echo "netns.sh: 'ip' not found (apt-get install iproute2)" >&2; exit 3
    fi
    if [ "$(id -u)" -ne 0 ]; then echo "netns.sh: network namespaces need root" >&2; exit 3; fi
}

sw="$prefix-sw"

down() {
    local i rc=0
    for i in $(seq 0 $((count - 1))); do
        if ip netns list | grep -qw "^$prefix$i"; then ip netns del "$prefix$i" || rc=1; fi
    done
    if ip netns list | grep -qw "^$sw"; then ip netns del "$sw" || rc=1; fi
    return $rc
}

up() {
    local i
    for i in $(seq 0 $((count - 1))) ; do
        if ip netns list | grep -qw "^$prefix$i"; then
            echo "netns.sh: namespace $prefix$i exists already (run: $0 down -n $count -p $prefix)" >&2; exit 1
        fi
    done
    ip netns add "$sw"
    ip -n "$sw" link set lo up
    ip -n "$sw" link add br0 type bridge
    ip -n "$sw" link set br0 up
    for i in $(seq 0 $((count - 1))); do
        local ns="$prefix$i"
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        # both ends are created directly inside our namespaces
        ip -n "$sw" link add "h$i" type veth peer name eth0 netns "$ns"
        ip -n "$sw" link set "h$i" master br0
        ip -n "$sw" link set "h$i" up
        ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev eth0
        ip -n "$ns" link set eth0 up
        if [ -n "$rate" ]; then
            # token bucket at RATE: a burst of 64 KiB (>= one GSO segment), at most 50 ms queued
            ip netns exec "$ns" tc qdisc add dev eth0 root handle 1: tbf rate "$rate" burst 64kb latency 50ms
            if [ "$delay" != 0 ]; then ip netns exec "$ns" tc qdisc add dev eth0 parent 1:1 handle 10: netem delay "${delay}ms"; fi
        elif [ "$delay" != 0 ]; then ip netns exec "$ns" tc qdisc add dev eth0 root netem delay "${delay}ms"; fi
    done
    # wait until every eth0 has carrier (the bridge ports take a moment)
    for _ in $(seq 50); do
        local down_n=0
        for i in $(seq 0 $((count - 1))); do
            ip -n "$prefix$i" link show eth0 | grep -q 'LOWER_UP' || down_n=$((down_n + 1))
        done
        [ $down_n -eq 0 ] && break
        sleep 0.1
    done
}

status() {
    local i
    for i in $(seq 0 $((count - 1))); do
        local ns="$prefix$i"
        if ip netns list | grep -qw "^$ns"; then
            echo "$ns: $(ip -n "$ns" -o -4 addr show dev eth0 2>/dev/null | awk '{print $4}')"
        else
            echo "$ns: absent"
        fi
    done
}

case $cmd in
    up) need; trap 'echo "netns.sh: setup failed; removing what was made" >&2; down || true' ERR; up; trap - ERR; status ;;
    down) need; down ;;
    status) need; status ;;
    *) echo "usage: $0 up|down|status [-n COUNT] [-p PREFIX] [-s SUBNET] [--delay-ms MS] [--rate RATE]" >&2; exit 2 ;;
esac
