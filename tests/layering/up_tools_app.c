/* Layering probe, compiled with the tools layer's include directories and
 * links (tests/layering/CMakeLists.txt): "server.h" belongs to a layer that tools
 * may not use, so this must fail to compile. */
#include "server.h"
