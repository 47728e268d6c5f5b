/* Layering probe, compiled with the mcp layer's include directories and
 * links (tests/layering/CMakeLists.txt): "wire.h" belongs to a layer that mcp
 * may not use, so this must fail to compile. */
#include "wire.h"
