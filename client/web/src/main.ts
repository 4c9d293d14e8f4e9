/** The participant page's entry point: the test hook, then the app. */
export {};
