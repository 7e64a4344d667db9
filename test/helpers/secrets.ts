/** The signing secret (24 bytes of key) the tests sign with where which secret it is does not matter. */
export const TEST_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
