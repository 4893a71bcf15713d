// Preload (`node --import ./skew-clock.mjs …`): this process's clock is off by CLOCK_SKEW_MS.
// For tests that prove leases follow the database's clock, not a gateway's.
const skew = Number(process.env.CLOCK_SKEW_MS ?? 0);
const realNow = Date.now.bind(Date);
Date.now = () => realNow() + skew;
