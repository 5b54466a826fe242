"""What every bench script means by "other processes' CPU": the machine's
busy time while a tool ran, less what the tool (and, where it applies, its
server) used itself. One definition, so that the flags of net.sh, disk.sh
and db.sh mean the same thing."""


def busy_ticks():
    """System-wide busy clock ticks outside interrupts: user + nice + system
    (guest time is already inside user). irq and softirq are left out: the
    kernel charges a tool's own interrupt work (loopback's softirq, a disk's
    completions) there or to the task that caused it, depending on its
    accounting, so counting it would pass the tool's own work for others'."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[1]) + int(fields[2]) + int(fields[3])
