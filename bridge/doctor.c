/* doctor: stub */
#include "doctor.h"
int doctor_main(int argc, char **argv, const char *self_argv0, const family_t *fam)
{
    return 1;
}
