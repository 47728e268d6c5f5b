/* Layering probe, compiled with the runtime layer's include directories and
 * links (tests/layering/CMakeLists.txt): "mcp.h" belongs to a layer that runtime
 * may not use, so this must fail to compile. */
#include "mcp.h"
