/* bcryptprimitives.dll for Wine 8.0, which lacks it: Rust's std imports
 * ProcessPrng from it, and without it every Rust .exe exits 53 before main.
 * ProcessPrng fills a buffer from the system RNG; BCryptGenRandom does that. */
#include <windows.h>

#define BCRYPT_USE_SYSTEM_PREFERRED_RNG 0x00000002

__declspec(dllimport) LONG WINAPI BCryptGenRandom(void *algorithm, unsigned char *buffer, ULONG length, ULONG flags);

__declspec(dllexport) BOOL WINAPI ProcessPrng(unsigned char *data, SIZE_T length) {
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (BCryptGenRandom(NULL, data, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0) {
            return FALSE;
        }
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
