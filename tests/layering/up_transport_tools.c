/* Layering probe, compiled with the mcp_transport layer's include directories and
 * links (tests/layering/CMakeLists.txt): "tools.h" belongs to a layer that mcp_transport
 * may not use, so this must fail to compile. */
#include "tools.h"
