// The tenant worker process: `gpuwasm __worker SUPERVISOR_PID`, started by the supervisor
// (tenant_worker.h) with its socket on fd 3 and the shared metrics segment on fd 4, and nothing
// else open. It owns one tenant's device context and runs that tenant's instances, each on a
// thread of its own, with the artifacts the supervisor compiled (it never compiles a module).
//
// Before it takes any work it locks itself down: it dies with its supervisor (PR_SET_PDEATHSIG),
// holds no other descriptor, has the tenant's limits on open files and CPU seconds, a private
// TMPDIR (the supervisor's, removed after it), no new privileges, and a seccomp filter that
// refuses every network socket (only local ones are left). A process-fatal device error or a
// kernel that cannot be stopped is reported (`fatal`) and ends the process; allocation failure
// marks the shared segment before the process aborts, so the supervisor can say why it died.
#pragma once

namespace gpuwasm::runtime {

int WorkerMain(int argc, char** argv);

}  // namespace gpuwasm::runtime
