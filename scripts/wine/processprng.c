/*
 * bcryptprimitives.dll for Wine 8: Go 1.24 and later read their random
 * numbers from bcryptprimitives.dll!ProcessPrng, which Windows 10 has and
 * Wine 8 (Debian bookworm's wine64) lacks, so narrows.exe stops at start
 * with "bcryptprimitives.dll not found". This DLL exports ProcessPrng over
 * advapi32's RtlGenRandom (SystemFunction036), which Wine has. It is used
 * only by the tests that run narrows.exe under Wine (internal/itest/wine.go
 * builds it with mingw-w64 into the test's Wine prefix); narrows ships
 * nothing of it.
 */
#include <windows.h>

typedef BOOLEAN(WINAPI *genrandom_t)(PVOID, ULONG);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	static genrandom_t gen;
	if (!gen) {
		HMODULE adv = LoadLibraryA("advapi32.dll");
		if (adv)
			gen = (genrandom_t)GetProcAddress(adv, "SystemFunction036");
	}
	while (len > 0) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (!gen || !gen(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
