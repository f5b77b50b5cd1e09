// What each model provider accepts as an image (R22), from its documentation, so an image is made
// to fit (or described in text) when it is saved, instead of being refused on every later call.
//
// Anthropic, "Vision" (platform.claude.com/docs/en/build-with-claude/vision): "The maximal
// dimensions per image are 8000x8000 px. If you submit more than 20 images in one API request,
// this limit is reduced to 2000x2000 px"; up to 600 images per request (100 in earlier versions of
// the page), within the 32 MB request limit; an image's base64 is refused over 5 MB ("image exceeds
// 5 MB maximum: N bytes > 5242880 bytes"); larger images than a long edge of 1568 px are scaled
// down by the API before the model sees them, so shrinking to that loses nothing. Types: JPEG, PNG,
// GIF, WebP.
// OpenAI, "Images and vision" (developers.openai.com/api/docs/guides/images-vision): PNG, JPEG,
// WEBP and non-animated GIF; up to 50 MB of payload and 500 images per request; with `detail:
// high` an image is scaled to fit 2048×2048 first, so shrinking to that loses nothing. No side
// limit is documented; one image is kept to Hippo's own 5 MiB (a request's images share 20 MiB,
// AgentSettings.requestMaxImageBytes).

/** One provider's limits on the images of a request. */
export interface ProviderImageLimits {
  /** Which provider's documentation the numbers come from. */
  provider: 'anthropic' | 'openai';
  /** Largest image, as characters of its base64 (the data URL's payload). */
  maxBase64Chars: number;
  /** Longest side an image may have, in pixels. */
  maxSide: number;
  /** Long side an image that must be shrunk is shrunk to (what the provider scales it to anyway). */
  shrinkSide: number;
  /** Image types the provider takes (MIME). */
  types: ReadonlySet<string>;
  /** Whether an animated GIF or WebP is taken (else its first frame is sent). */
  animated: boolean;
  /** Most images one request may show. */
  maxImagesPerRequest: number;
}

/** The four types every provider here takes. */
const commonTypes: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** Anthropic: 5 MB of base64 per image; above this many images, each side at most 2,000 px. */
const anthropicManyImages = 20;

/**
 * The limits of `provider`'s images when a request shows up to `requestMaxImages` of them
 * (AgentSettings.requestMaxImages): Anthropic's 2,000 px applies when that may exceed 20.
 */
export function imageLimitsFor(provider: 'anthropic' | 'openai', requestMaxImages: number): ProviderImageLimits {
  if (provider === 'anthropic') {
    return {
      provider,
      maxBase64Chars: 5 * 1024 * 1024,
      maxSide: requestMaxImages > anthropicManyImages ? 2_000 : 8_000,
      shrinkSide: 1_568,
      types: commonTypes,
      animated: true,
      maxImagesPerRequest: 100,
    };
  }
  return {
    provider,
    maxBase64Chars: Math.ceil((5 * 1024 * 1024) / 3) * 4,
    maxSide: 16_384,
    shrinkSide: 2_048,
    types: commonTypes,
    animated: false,
    maxImagesPerRequest: 500,
  };
}

/** Characters of the base64 of `bytes` bytes. */
export function base64Chars(bytes: number): number {
  return Math.ceil(bytes / 3) * 4;
}
