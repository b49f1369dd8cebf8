/// <reference types="w3c-web-usb" />
/**
 * The browser side of the devices page: whether WebUSB can work here, and picking and opening an
 * Android device through it. Every way this can fail ends as a DeviceError with a message that
 * says what to do next.
 */
import type { AdbDaemonConnection } from '@yume-chan/adb';
import { AdbDaemonWebUsbDevice, AdbDaemonWebUsbDeviceManager } from '@yume-chan/adb-daemon-webusb';

export type WebUsbSupport =
  | { ok: true; usb: USB }
  | { ok: false; reason: 'insecure' | 'unsupported' | 'blocked'; message: string };

/** What the browser allows, checked in the order that gives the most useful answer. */
export function webUsbSupport(): WebUsbSupport {
  // WebUSB exists only in secure contexts, so an http page on another host looks "unsupported"
  // in every browser; say the real reason first.
  if (!window.isSecureContext) {
    return {
      ok: false,
      reason: 'insecure',
      message:
        'Installing from the browser needs a secure page: open this site over https, or on localhost. ' +
        `This page was loaded from ${window.location.origin}.`,
    };
  }
  const usb = (navigator as Navigator & { usb?: USB }).usb;
  if (usb === undefined || usb === null) {
    return {
      ok: false,
      reason: 'unsupported',
      message: 'This browser has no WebUSB. Use Chrome, Edge or another Chromium-based browser on a computer.',
    };
  }
  const policy = (document as Document & { featurePolicy?: { allowsFeature(feature: string): boolean } }).featurePolicy;
  if (policy !== undefined && !policy.allowsFeature('usb')) {
    return { ok: false, reason: 'blocked', message: "This page's Permissions-Policy blocks WebUSB; the server must allow usb for its own origin." };
  }
  return { ok: true, usb };
}

export class DeviceError extends Error {
  constructor(
    readonly reason: 'no-device' | 'busy' | 'open-failed',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DeviceError';
  }
}

/** Shows the browser's device picker, listing only devices with USB debugging on. */
export async function pickDevice(usb: USB): Promise<AdbDaemonWebUsbDevice> {
  const manager = new AdbDaemonWebUsbDeviceManager(usb);
  // The library answers undefined when the picker is cancelled or lists nothing (NotFoundError).
  const device = await manager.requestDevice();
  if (device === undefined) {
    throw new DeviceError(
      'no-device',
      'No device was selected. Connect the Android device by USB, turn on USB debugging (Settings › Developer options), ' +
        'unlock it, then choose it in the browser’s list.',
    );
  }
  return device;
}

export async function openDevice(device: AdbDaemonWebUsbDevice): Promise<AdbDaemonConnection> {
  try {
    return await device.connect();
  } catch (err) {
    if (err instanceof AdbDaemonWebUsbDevice.DeviceBusyError) {
      throw new DeviceError(
        'busy',
        'The device is in use by another program, usually an adb server on this computer. Stop it (adb kill-server) and try again.',
        { cause: err },
      );
    }
    throw new DeviceError('open-failed', `The device could not be opened: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** Releases the USB interface so another attempt (or another program) can use the device. */
export async function closeDevice(device: AdbDaemonWebUsbDevice): Promise<void> {
  if (device.raw.opened) await device.raw.close();
}
