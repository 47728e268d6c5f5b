/* Layering probe, compiled with the base layer's include directories and
 * links (tests/layering/CMakeLists.txt): "jsonrpc.h" belongs to a layer that base
 * may not use, so this must fail to compile. */
#include "jsonrpc.h"
