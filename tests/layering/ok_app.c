/* Layering probe, positive control: compiled with the app layer's include
 * directories, every header the up_*.c probes name is found (so their
 * failure is the layering, not a missing file). */
#include "jsonrpc.h"
#include "mcp.h"
#include "wire.h"
#include "runtime.h"
#include "tools.h"
#include "server.h"
